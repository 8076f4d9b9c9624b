package main

import "testing"

func TestStats_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"stats"}, exitUsage, "stats takes 1 argument(s), got 0"},
		{[]string{"stats", "a", "b"}, exitUsage, "got 2"},
	})
}
