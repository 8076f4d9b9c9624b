package main

import "testing"

func TestForkrun_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"fork-run"}, exitUsage, "fork-run takes 1 argument(s), got 0"},
		{[]string{"fork-run", "r", "-n", "x"}, exitUsage, "not a whole number"},
		{[]string{"fork-run", "r", "--budget", "lots"}, exitUsage, "not a number"},
	})
}
