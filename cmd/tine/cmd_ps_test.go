package main

import "testing"

func TestPs_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"ps"}, exitUsage, "ps takes 1 argument(s), got 0"},
	})
}
