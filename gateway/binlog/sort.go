package binlog

import (
	"cmp"
	"slices"
)

func sortProgress(rows []ProgressRow) {
	slices.SortStableFunc(rows, func(a, b ProgressRow) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), a.Bucket.Compare(b.Bucket), boolOrder(a.Checkpoint)-boolOrder(b.Checkpoint))
	})
}

// boolOrder puts checkpoint rows (true) first.
func boolOrder(checkpoint bool) int {
	if checkpoint {
		return 0
	}
	return 1
}
