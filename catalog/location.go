package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/setats/setats/internal/culprit"
)

// Table locations (SPEC section 14: "a table location must lie inside the warehouse").
//
// A location given in a table spec is a path or a file: URI; a relative path is relative to the
// warehouse directory W. CheckLocation accepts it only when, with every symbolic link of its
// existing part resolved, it lies strictly inside W and
//   - outside every database directory W/<name>.db, except that it may be the table's own
//     default location W/<db>.db/<table>: a table's location cannot squat the directory of
//     another table, present or future;
//   - outside every top-level name starting with "_" or "." (the gateway's own directories,
//     such as W/_subscriptions);
//   - with no part that exists and is not a directory, and no dangling symbolic link (whose
//     target a later mkdir would create, wherever it points).
//
// Nothing of a rejected location is created. Two tables never share a location and no table's
// location lies inside another's (hadoopCatalog.checkLocation).

// CheckLocation checks the resolved location of table t (t.Location, from ResolveSpec) against
// the warehouse directory root as described above and returns the location with its symbolic
// links resolved (what overlap checks compare). given is the location as the request spelled
// it, for the message. Errors: ErrInvalid naming the location (truncated, internal/culprit) and
// what it resolves to; ErrInternal when the file system cannot be read.
func CheckLocation(root string, t *Table, given string) (string, error) {
	if given == "" {
		given = t.Location
	}
	fail := func(format string, args ...any) error {
		return errorf(ErrInvalid, "table %s: location %s %s", t.QualifiedName(), culprit.Quote(given), fmt.Sprintf(format, args...))
	}
	if len(t.Location) > maxLocationBytes {
		return "", fail("is longer than %d bytes", maxLocationBytes)
	}
	realRoot, err := resolveExisting(root)
	if err != nil {
		return "", errorf(ErrInternal, "table %s: resolve warehouse directory %s: %w", t.QualifiedName(), root, err)
	}
	real, err := resolveExisting(t.Location)
	if err != nil {
		var bad *badPathError
		if errors.As(err, &bad) {
			return "", fail("%s", bad.msg)
		}
		return "", errorf(ErrInternal, "table %s: resolve location %s: %s", t.QualifiedName(), culprit.Quote(t.Location), culprit.Cap(err.Error()))
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fail("resolves to %s, which is not inside the warehouse %s: a location must lie inside the warehouse "+
			"(a relative location is relative to it)", culprit.Quote(real), culprit.Quote(realRoot))
	}
	top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	switch {
	case strings.HasSuffix(top, databaseDirSuffix):
		own, err := resolveExisting(DefaultLocation(root, t.Database, t.Name))
		if err != nil || real != own {
			return "", fail("resolves to %s, inside the database directory %s: only the table's own default location "+
				"%s may lie there; choose a location outside the W/<database>.db directories",
				culprit.Quote(real), culprit.Quote(filepath.Join(realRoot, top)), culprit.Quote(DefaultLocation(root, t.Database, t.Name)))
		}
	case strings.HasPrefix(top, "_") || strings.HasPrefix(top, "."):
		return "", fail("resolves to %s, inside %s, which the gateway reserves (names starting with _ or .)",
			culprit.Quote(real), culprit.Quote(filepath.Join(realRoot, top)))
	}
	return real, nil
}

// maxLocationBytes bounds a location's length (Linux's PATH_MAX).
const maxLocationBytes = 4096

// badPathError is a location that cannot be a directory: a part of it that exists and is not a
// directory, or a dangling symbolic link.
type badPathError struct{ msg string }

func (e *badPathError) Error() string { return e.msg }

// resolveExisting returns p (absolute, clean) with the symbolic links of its longest existing
// prefix resolved and the rest appended unchanged. A part that exists but is not a directory
// (but for p itself being a directory) or a dangling symbolic link is a *badPathError.
func resolveExisting(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", &badPathError{msg: "holds a NUL byte"}
	}
	rest := ""
	cur := p
	for {
		fi, err := os.Lstat(cur)
		if err == nil {
			real, err := filepath.EvalSymlinks(cur)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return "", &badPathError{msg: "passes through the dangling symbolic link " + culprit.Quote(cur)}
				}
				return "", err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				if fi, err = os.Stat(real); err != nil {
					return "", err
				}
			}
			if !fi.IsDir() {
				return "", &badPathError{msg: "passes through " + culprit.Quote(cur) + ", which is not a directory"}
			}
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			if errors.Is(err, syscall.ENOTDIR) {
				return "", &badPathError{msg: "passes through a file that is not a directory"}
			}
			if errors.Is(err, syscall.ENAMETOOLONG) {
				return "", &badPathError{msg: "has a name that is too long"}
			}
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return filepath.Join(cur, rest), nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
