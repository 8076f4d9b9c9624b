package main

import "testing"

func TestDiff_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"diff"}, exitUsage, "diff takes 1 argument(s)"},
		{[]string{"diff", "r", "--patch", "--json"}, exitUsage, "if any flags in the group"},
		{[]string{"diff", "r", "--patch", "--stat"}, exitUsage, "if any flags in the group"},
	})
}
