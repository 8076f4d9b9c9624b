package main

import "testing"

func TestSummary_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"summary"}, exitUsage, "summary takes 1 argument(s), got 0"},
	})
}
