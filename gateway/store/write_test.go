package store

import (
	"fmt"
	"testing"

	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/merge"
)

// TestGroupRowsPartitionNames checks that every row of a batch lands in the group of its own
// partition when rows of more partitions than groupRows keeps names for alternate, and when
// partitions repeat after others.
func TestGroupRowsPartitionNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []int // partition value of each row, in batch order
	}{
		{"alternating 4", []int{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}},
		{"runs", []int{0, 0, 0, 1, 1, 2, 2, 2, 0, 0, 1}},
		{"more than cached", func() []int {
			var p []int
			for i := range 5 * maxCachedPartitions {
				p = append(p, (i*7)%(2*maxCachedPartitions+3))
			}
			return p
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := resolve(t, t.TempDir(), spec("t", "id INT, dt STRING, v STRING", "id,dt", "dt", 2, "", nil))
			st := openTable(t, tbl, &fakeClock{ms: 1})
			b := &row.Batch{Declared: []bool{true, true, true}}
			for i, p := range tc.parts {
				b.Rows = append(b.Rows, merge.Row{int32(i), fmt.Sprintf("2024-06-%02d", p), "v"})
				b.Kinds = append(b.Kinds, merge.Insert)
			}
			groups := st.groupRows(b)
			seen := 0
			for _, g := range groups {
				for _, r := range g.rows {
					if want := partname.Of(tbl, b.Rows[r]); g.b.id.Partition != want {
						t.Errorf("row %d in partition %q, want %q", r, g.b.id.Partition, want)
					}
					seen++
				}
			}
			st.mu.Lock()
			for _, g := range groups {
				st.releaseBucket(g.b)
			}
			st.mu.Unlock()
			if seen != len(b.Rows) {
				t.Errorf("%d rows grouped, want %d", seen, len(b.Rows))
			}
		})
	}
}
