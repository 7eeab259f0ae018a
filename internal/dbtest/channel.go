package dbtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/setats/setats/gateway/subscribe"
)

// Dump renders records one a line for comparisons: "OP object before=(..) after=(..) tx=T",
// values as text (NULL as null). HEARTBEATs are left out.
func Dump(recs []subscribe.Record) []string {
	var out []string
	for _, r := range recs {
		if r.Op == subscribe.OpHeartbeat {
			continue
		}
		line := r.Op.String()
		if r.Object != "" {
			line += " " + r.Object
		}
		img := func(name string, vals [][]byte) {
			if vals == nil {
				return
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				if v == nil {
					parts[i] = "null"
				} else {
					parts[i] = string(v)
				}
			}
			line += fmt.Sprintf(" %s(%s)", name, strings.Join(parts, ","))
		}
		img("before", r.Before)
		img("after", r.After)
		out = append(out, line)
	}
	return out
}

// WaitRecords reads ch from id from until pred holds for the records read (without heartbeats)
// or a minute passed, and returns them.
func WaitRecords(t testing.TB, ch *subscribe.Channel, from int64, pred func([]subscribe.Record) bool) []subscribe.Record {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var recs []subscribe.Record
	next := from
	for {
		wait := ch.Wait(next)
		buf, err := ch.Read(next, 10000, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range buf {
			next = r.ID + 1
			if r.Op != subscribe.OpHeartbeat {
				recs = append(recs, r)
			}
		}
		if pred(recs) {
			return recs
		}
		select {
		case <-wait:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("timed out waiting for records; have:\n%s", strings.Join(Dump(recs), "\n"))
		}
	}
}

// CountOp returns a predicate: at least n records of op.
func CountOp(op subscribe.Op, n int) func([]subscribe.Record) bool {
	return func(rs []subscribe.Record) bool {
		c := 0
		for _, r := range rs {
			if r.Op == op {
				c++
			}
		}
		return c >= n
	}
}
