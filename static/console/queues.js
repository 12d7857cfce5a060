// /queues/: every pool's use and counts, live from pool.updated (the GET /api/v1/pools entry);
// after a resync all pools are read again.

import { on, startStream } from "./shared/stream.js";
import { refreshPools, showPool } from "./shared/usage.js";

const page = JSON.parse(document.getElementById("page-data").textContent);
const board = document.getElementById("pools") ?? document.body;

on("pool.updated", (state) => showPool(board, state));
on("resync", () => refreshPools(board));
startStream(document.querySelector("[data-live]"), page.seq);
