package main

import "testing"

func TestInit_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"init", "a", "b"}, exitUsage, "init takes at most 1 argument(s), got 2"},
		{[]string{"init", "--group", "tine-no-such-group"}, exitUsage, "--group tine-no-such-group: no such group"},
	})
}
