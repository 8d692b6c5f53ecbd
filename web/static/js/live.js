// The Socket.IO connection of a page, and the server's clock as the page last heard it.
import { io } from "/vendor/socket.io.esm.min.js";

import { showConnection } from "./dom.js";

// `subscribe` runs on every connection, the first and each reconnection.
export function connect(subscribe) {
  const socket = io();
  socket.on("connect", () => {
    showConnection("live");
    subscribe(socket);
  });
  socket.on("disconnect", () => showConnection("reconnecting"));
  return socket;
}

let offsetMs = 0;

export function heardServerTime(nowMs) {
  offsetMs = nowMs - Date.now();
}

export function serverNow() {
  return Date.now() + offsetMs;
}
