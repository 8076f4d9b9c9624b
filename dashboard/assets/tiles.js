// The group page's screens: each fork's display through noVNC (vendored
// in novnc/, see novnc/VENDORED), over the dashboard's WebSocket bridge to
// the fork's VNC server. View-only until the person presses drive. A
// fork's display that was left idle is stopped by the daemon and its tile
// disconnects; reconnect starts it again (the bridge does, on connecting).
import RFB from "./novnc/core/rfb.js";

function setup(tile) {
  const state = tile.querySelector(".screen-state");
  const drive = tile.querySelector("button.drive");
  const again = tile.querySelector("button.reconnect");
  let rfb = null;
  const connect = () => {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    tile.dataset.state = "connecting";
    state.textContent = "connecting";
    again.hidden = true;
    rfb = new RFB(tile.querySelector(".screen"), scheme + location.host + tile.dataset.vnc);
    rfb.viewOnly = drive.textContent === "drive";
    rfb.scaleViewport = true;
    rfb.addEventListener("connect", () => { tile.dataset.state = "connected"; state.textContent = "live"; });
    rfb.addEventListener("disconnect", () => {
      tile.dataset.state = "disconnected";
      state.textContent = "disconnected";
      again.hidden = false;
    });
  };
  drive.addEventListener("click", () => {
    rfb.viewOnly = !rfb.viewOnly;
    drive.textContent = rfb.viewOnly ? "drive" : "stop driving";
    tile.classList.toggle("driving", !rfb.viewOnly);
    if (!rfb.viewOnly) rfb.focus();
  });
  again.addEventListener("click", connect);
  tile.querySelector("button.enlarge").addEventListener("click", () => tile.classList.toggle("enlarged"));
  connect();
}

document.querySelectorAll(".screen-tile").forEach(setup);
