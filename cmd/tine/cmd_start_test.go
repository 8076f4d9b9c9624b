package main

import "testing"

func TestStart_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"start"}, exitUsage, "start takes 1 argument(s), got 0"},
	})
}
