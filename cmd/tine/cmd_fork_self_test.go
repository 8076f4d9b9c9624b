package main

import "testing"

func TestForkSelf_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"fork-self", "x"}, exitUsage, "fork-self takes 0 argument(s), got 1"},
		{[]string{"fork-self", "-n", "x"}, exitUsage, "not a whole number"},
		{[]string{"fork-self"}, exitState, "this command works inside a run"},
	})
}
