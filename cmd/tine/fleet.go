package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/store"
)

// fleetURL returns the fleet's database: $TINE_FLEET_URL, else the
// store's URL if it is PostgreSQL's.
func (a *app) fleetURL() (string, error) {
	if u := os.Getenv(fleet.EnvURL); u != "" {
		return u, nil
	}
	u, err := store.URL(a.home)
	if err != nil {
		return "", err
	}
	if kind, err := store.Kind(u); err != nil || kind != "postgres" {
		return "", fmt.Errorf("tine %s needs the fleet's PostgreSQL: set %s=postgres://… (or make the store PostgreSQL's: %s or [store] url): %w",
			a.cmd, fleet.EnvURL, store.EnvURL, tine.ErrInvalid)
	}
	return u, nil
}

// withFleet opens the fleet and calls fn with it.
func (a *app) withFleet(ctx context.Context, fn func(*fleet.Fleet) error) error {
	u, err := a.fleetURL()
	if err != nil {
		return err
	}
	f, err := fleet.Open(ctx, u)
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(f)
}
