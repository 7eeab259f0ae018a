// Package culprit formats the inputs that error messages name, so that a hostile input of any size
// comes back short: every refusal names its culprit, truncated.
package culprit

import (
	"fmt"
	"unicode/utf8"
)

// MaxBytes is how many bytes of a culprit an error message keeps.
const MaxBytes = 128

// Truncate returns s when it has at most MaxBytes bytes, else its first MaxBytes bytes (cut at a
// UTF-8 boundary) followed by "...(N bytes)" with N the length of s.
func Truncate(s string) string {
	if len(s) <= MaxBytes {
		return s
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:cut], len(s))
}

// Quote returns Truncate(s) as a Go-quoted string (%q), the form error messages use for names
// and values a client sent. Invalid UTF-8 and control characters come out escaped.
func Quote(s string) string {
	if len(s) <= MaxBytes {
		return fmt.Sprintf("%q", s)
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...(%d bytes)", s[:cut], len(s))
}

// MaxMessageBytes is the longest error message Cap lets through.
const MaxMessageBytes = 1024

// Cap returns msg when it has at most MaxMessageBytes bytes, else its first and last bytes around
// "...(N bytes)...", N the length of msg: the safety net at the gateway's edge for a message that
// names a long input without Truncate.
func Cap(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	head, tail := MaxMessageBytes*3/4, MaxMessageBytes/8
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	from := len(msg) - tail
	for from < len(msg) && !utf8.RuneStart(msg[from]) {
		from++
	}
	return fmt.Sprintf("%s...(%d bytes)...%s", msg[:head], len(msg), msg[from:])
}
