package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/setats/setats/gateway/auth"
)

// user runs `setats user <subcommand>`. hash-password reads one line (the password, without its
// line break) from stdin and prints its bcrypt hash (cost 10; --cost N) for the password field
// of a users file. The password is never echoed or logged.
func user(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const usage = "usage: setats user hash-password [--cost N] < password\n"
	if len(args) == 0 || args[0] != "hash-password" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cost := auth.DefaultCost
	rest := args[1:]
	for len(rest) > 0 {
		switch {
		case (rest[0] == "--cost" || rest[0] == "-cost") && len(rest) > 1:
			if _, err := fmt.Sscanf(rest[1], "%d", &cost); err != nil || cost < 4 || cost > 31 {
				fmt.Fprintf(stderr, "setats user hash-password: --cost must be 4..31, got %q\n", rest[1])
				return 2
			}
			rest = rest[2:]
		default:
			fmt.Fprint(stderr, usage)
			return 2
		}
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Fprintf(stderr, "setats user hash-password: read stdin: %v\n", err)
		return 1
	}
	pw := strings.TrimRight(line, "\r\n")
	h, err := auth.HashPassword([]byte(pw), cost)
	if err != nil {
		fmt.Fprintf(stderr, "setats user hash-password: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(h))
	return 0
}
