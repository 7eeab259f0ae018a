package catalog

import (
	"net/url"
	"path/filepath"
	"strings"
)

// NormalizeWarehouse returns the normal form "file:///abs/path" of a warehouse (SPEC sections 0
// and 2): a plain path or a file: URI ("file:///abs", "file:/abs", "file://localhost/abs").
// Relative paths are resolved against the current directory; the path is cleaned (no trailing
// slash, no "." or ".." elements) and percent escapes of a URI are decoded. Symbolic links are not
// resolved. Two warehouses are the same when their normal forms are equal.
//
// Other schemes (hdfs://, s3://, cosn://, ...) and file URIs with a remote host are a
// ErrInvalid error naming the warehouse (object stores: SPEC section 8).
func NormalizeWarehouse(w string) (string, error) {
	p, err := WarehouseDir(w)
	if err != nil {
		return "", err
	}
	return pathURI(p), nil
}

// WarehouseDir returns the absolute local directory of a warehouse given as NormalizeWarehouse
// accepts it, with the same errors.
func WarehouseDir(w string) (string, error) {
	return localPath("warehouse", w, "")
}

// localPath turns a plain path or file: URI into a clean absolute path. A relative path is
// resolved against base, or against the current directory when base is "". what names the
// setting in errors ("warehouse", "location").
func localPath(what, s, base string) (string, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return "", errorf(ErrInvalid, "%s is empty: want a path or file:///abs/path", what)
	}
	p := v
	if len(v) >= 5 && strings.EqualFold(v[:5], "file:") {
		u, err := url.Parse(v)
		if err != nil {
			return "", errorf(ErrInvalid, "%s %q is not a valid file URI: %w", what, s, err)
		}
		if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
			return "", errorf(ErrInvalid,
				"%s %q names host %q: only local file URIs (file:///abs/path) are supported", what, s, u.Host)
		}
		if u.Opaque != "" || u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return "", errorf(ErrInvalid, "%s %q: a file URI needs an absolute path (file:///abs/path)", what, s)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return "", errorf(ErrInvalid, "%s %q: a file URI may not have a query or fragment", what, s)
		}
		p = u.Path
	} else if i := strings.Index(v, "://"); i > 0 {
		return "", errorf(ErrInvalid,
			"%s %q: scheme %q is not supported yet; use a local path or file:///abs/path (object stores: SPEC section 8)",
			what, s, v[:i])
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			abs, err := filepath.Abs(p)
			if err != nil {
				return "", errorf(ErrInvalid, "%s %q: %w", what, s, err)
			}
			p = abs
		} else {
			p = filepath.Join(base, p)
		}
	}
	return filepath.Clean(p), nil
}

// pathURI renders an absolute path as a file URI: "/a/b" -> "file:///a/b".
func pathURI(p string) string {
	return "file://" + filepath.ToSlash(p)
}
