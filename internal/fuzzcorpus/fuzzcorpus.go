// Package fuzzcorpus writes seed corpus files of Go fuzz targets (testdata/fuzz/<FuzzName>/<name>,
// the "go test fuzz v1" format that `go test` reads), so that seeds built in code can be checked in.
package fuzzcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Write writes one corpus entry of the fuzz target fuzzName under dir/testdata/fuzz with the
// values vals ([]byte, string, uint8, int64, bool), in the order of the fuzz function's arguments.
func Write(dir, fuzzName, name string, vals ...any) error {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range vals {
		switch x := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(x)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(x))
		case uint8:
			fmt.Fprintf(&b, "byte(%d)\n", x)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", x)
		case bool:
			fmt.Fprintf(&b, "bool(%t)\n", x)
		default:
			return fmt.Errorf("fuzzcorpus: unsupported value type %T", v)
		}
	}
	d := filepath.Join(dir, "testdata", "fuzz", fuzzName)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, name), []byte(b.String()), 0o644)
}

// Enabled reports whether seed corpora should be rewritten: SETATS_WRITE_FUZZ_CORPUS=1.
func Enabled() bool { return os.Getenv("SETATS_WRITE_FUZZ_CORPUS") == "1" }
