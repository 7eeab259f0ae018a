package subscribe

import (
	"strconv"
	"strings"
)

// FormatCheckpoint returns the checkpoint string of a record (SPEC section 11):
// "0@<id>@<source position>@<source timestamp ms>", e.g. "0@12006303@289540@2688@1625045211000"
// for id 12006303, position "289540@2688" and timestamp 1625045211000 ms. The position may itself
// contain '@'.
func FormatCheckpoint(id int64, position string, timestampMs int64) string {
	var b strings.Builder
	b.WriteString("0@")
	b.WriteString(strconv.FormatInt(id, 10))
	b.WriteByte('@')
	b.WriteString(position)
	b.WriteByte('@')
	b.WriteString(strconv.FormatInt(timestampMs, 10))
	return b.String()
}

// ParseCheckpoint is the inverse of FormatCheckpoint: the id is the field after the leading
// "0@", the timestamp the field after the last '@', the position everything in between. A
// malformed string is a *Error of kind InvalidArgument quoting it.
func ParseCheckpoint(s string) (id int64, position string, timestampMs int64, err error) {
	bad := func(why string) error {
		return Errorf(InvalidArgument, "checkpoint %q: %s (want 0@<id>@<source position>@<source timestamp ms>)", truncate(s, 200), why)
	}
	rest, ok := strings.CutPrefix(s, "0@")
	if !ok {
		return 0, "", 0, bad("does not start with 0@")
	}
	idStr, rest, ok := strings.Cut(rest, "@")
	if !ok {
		return 0, "", 0, bad("no position")
	}
	if id, err = strconv.ParseInt(idStr, 10, 64); err != nil || id < 0 {
		return 0, "", 0, bad("bad id " + strconv.Quote(idStr))
	}
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return 0, "", 0, bad("no timestamp")
	}
	if timestampMs, err = strconv.ParseInt(rest[i+1:], 10, 64); err != nil {
		return 0, "", 0, bad("bad timestamp " + strconv.Quote(rest[i+1:]))
	}
	return id, rest[:i], timestampMs, nil
}

// truncate cuts s to at most n bytes for error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
