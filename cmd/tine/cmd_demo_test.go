package main

import "testing"

func TestDemo_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"demo", "x"}, exitUsage, "demo takes 0 argument(s), got 1"},
	})
}
