package main

import "testing"

func TestCost_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"cost", "a", "b"}, exitUsage, "cost takes 1 argument(s), got 2"},
	})
}
