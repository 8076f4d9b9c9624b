package main

import "testing"

func TestRefuse_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"refuse"}, exitUsage, "refuse takes 1 argument(s), got 0"},
	})
}
