package main

import "testing"

func TestCompare_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"compare"}, exitUsage, "compare takes 1 argument(s)"},
	})
}
