package catalog

import "testing"

func TestParseFlinkDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		ms   int64
		fail bool
	}{
		{"24h", 24 * 3600 * 1000, false},
		{"30 min", 30 * 60 * 1000, false},
		{"2s", 2000, false},
		{"500 ms", 500, false},
		{"1500", 1500, false},
		{"3 d", 3 * 86400 * 1000, false},
		{"259200 s", 259200 * 1000, false},
		{" 1 HOURS ", 3600 * 1000, false},
		{"1500000 us", 1500, false},
		{"5m", 300000, false},
		{"", 0, true},
		{"h", 0, true},
		{"-1s", 0, true},
		{"1 week", 0, true},
		{"1.5h", 0, true},
		{"99999999999999999999d", 0, true},
		{"9999999999999999d", 0, true},
	} {
		got, err := ParseFlinkDuration(c.in)
		if (err != nil) != c.fail || got != c.ms {
			t.Errorf("ParseFlinkDuration(%q) = %d, %v; want %d fail=%v", c.in, got, err, c.ms, c.fail)
		}
	}
}

// TestResolveBinlogOptions: the binlog options of SPEC section 8 resolve with their defaults and
// round-trip through the stored spec.
func TestResolveBinlogOptions(t *testing.T) {
	wh := t.TempDir()
	s := ordersSpec()
	s.Options = map[string]string{"changelog.enabled": "FALSE", "changelog.clean-on-consume": "true", "slot.ttl": "30 min"}
	tbl, err := ResolveSpec(s, Options{Warehouse: wh})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ChangelogEnabled || !tbl.CleanOnConsume || tbl.SlotTTLMs != 30*60*1000 || tbl.Options["slot.ttl"] != "1800000 ms" {
		t.Fatalf("resolved: enabled %v clean %v ttl %d options %v", tbl.ChangelogEnabled, tbl.CleanOnConsume, tbl.SlotTTLMs, tbl.Options)
	}
	again, err := ResolveSpec(tbl.Info.GetSpec(), Options{Warehouse: wh})
	if err != nil || again.SlotTTLMs != tbl.SlotTTLMs || again.ChangelogEnabled {
		t.Fatalf("round trip: %v %d", err, again.SlotTTLMs)
	}
	def, err := ResolveSpec(ordersSpec(), Options{Warehouse: wh})
	if err != nil || !def.ChangelogEnabled || def.CleanOnConsume || def.SlotTTLMs != DefaultSlotTTLMs {
		t.Fatalf("defaults: %v %v %v %d", err, def.ChangelogEnabled, def.CleanOnConsume, def.SlotTTLMs)
	}
}
