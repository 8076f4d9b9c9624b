package main

import "testing"

func TestShell_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"shell"}, exitUsage, "shell takes 1 argument(s), got 0"},
	})
}
