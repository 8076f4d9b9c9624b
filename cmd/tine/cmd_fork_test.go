package main

import "testing"

func TestFork_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"fork"}, exitUsage, "fork takes 1 argument(s), got 0"},
		{[]string{"fork", "r", "--copies", "two"}, exitUsage, "not a whole number"},
	})
}
