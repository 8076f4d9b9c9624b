package main

import "testing"

func TestLs_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"ls", "a", "b"}, exitUsage, "ls takes at most 1 argument(s), got 2"},
	})
}
