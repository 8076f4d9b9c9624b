package main

import "testing"

func TestRequest_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"request"}, exitUsage, "request takes 1 argument(s), got 0"},
		{[]string{"request", "merge"}, exitState, "this command works inside a run"},
	})
}
