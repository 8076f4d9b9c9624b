// Package desktop gives a run a display of its own: an X server with a VNC
// port (TigerVNC's Xvnc) and a light window manager (openbox), started by
// the run's supervisor in the run's namespaces, where the X server's only
// socket is abstract (in the run's network namespace) and its lock file in
// the run's own /tmp. It also reads the display's screen (xwd's dump, made
// a PNG here) and drives it (xdotool).
package desktop
