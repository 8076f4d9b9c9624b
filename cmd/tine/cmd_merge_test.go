package main

import "testing"

func TestMerge_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"merge"}, exitUsage, "merge takes 1 argument(s), got 0"},
		{[]string{"merge", "r", "--git", "--filesystem"}, exitUsage, "--git and --filesystem exclude each other"},
	})
}
