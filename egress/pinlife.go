package egress

import "time"

// PinLifetime is how long an address from an answer with ttl stays
// allowed, for a proxy that keeps the resolver's pins itself: the same
// clamp the rules' sets use.
func PinLifetime(ttl time.Duration) time.Duration { return pinFor(ttl) }
