package main

import "testing"

func TestGc_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"gc", "x"}, exitUsage, "gc takes 0 argument(s), got 1"},
	})
}
