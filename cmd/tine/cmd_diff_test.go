package main

import "testing"

func TestDiff_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"diff"}, exitUsage, "diff takes 1 argument(s)"},
		{[]string{"diff", "r", "--patch", "--json"}, exitUsage, "cannot be used together"},
		{[]string{"diff", "r", "--patch", "--stat"}, exitUsage, "cannot be used together"},
	})
}
