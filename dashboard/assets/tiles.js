// The group page's screens: each fork's display through noVNC (vendored
// in novnc/, see novnc/VENDORED), over the dashboard's WebSocket bridge to
// the fork's VNC port. View-only until the person presses drive.
import RFB from "./novnc/core/rfb.js";

function connect(tile) {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const rfb = new RFB(tile.querySelector(".screen"), scheme + location.host + tile.dataset.vnc);
  const state = tile.querySelector(".screen-state");
  const drive = tile.querySelector("button.drive");
  rfb.viewOnly = true;
  rfb.scaleViewport = true;
  rfb.addEventListener("connect", () => { tile.dataset.state = "connected"; state.textContent = "live"; });
  rfb.addEventListener("disconnect", () => { tile.dataset.state = "disconnected"; state.textContent = "disconnected"; });
  drive.addEventListener("click", () => {
    rfb.viewOnly = !rfb.viewOnly;
    drive.textContent = rfb.viewOnly ? "drive" : "stop driving";
    tile.classList.toggle("driving", !rfb.viewOnly);
    if (!rfb.viewOnly) rfb.focus();
  });
  tile.querySelector("button.enlarge").addEventListener("click", () => tile.classList.toggle("enlarged"));
}

document.querySelectorAll(".screen-tile").forEach(connect);
