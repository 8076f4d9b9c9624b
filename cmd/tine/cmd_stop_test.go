package main

import "testing"

func TestStop_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"stop"}, exitUsage, "stop takes 1 argument(s), got 0"},
	})
}
