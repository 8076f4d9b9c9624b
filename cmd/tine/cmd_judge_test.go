package main

import "testing"

func TestJudge_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"judge", "stats", "x"}, exitUsage, "stats takes 0 argument(s), got 1"},
		{[]string{"judge", "reset-weights"}, exitUsage, "reset-weights takes 1 argument(s), got 0"},
	})
}
