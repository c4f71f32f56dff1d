"""A small RAG service for the tests, run in its own process on 127.0.0.1 (stdlib only):
``python rag_service.py CORPUS PORT_FILE``. ``POST /ask`` takes ``{"question", "case_id",
"options": {"top_k"}}`` and answers ``{"answer", "contexts": [{text, doc_id, score}], "usage"}``
from word-overlap retrieval over CORPUS. ``GET /count`` says how many questions it was asked.

Faults on demand, by a marker in the question: ``[500]`` answers 500 with an error message,
``[slow]`` sleeps 3 s before answering, ``[badjson]`` answers 200 with a body that is not JSON,
``[noanswer]`` answers 200 without ``answer``, ``[flaky]`` answers 500 the first two times a
question is asked, then as usual. With ``$RAG_SERVICE_KEY`` set, a request without
``Authorization: Bearer <key>`` gets 401.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lexical import first_sentence, load, search

DOCS: dict[str, str] = {}
ASKED = {"n": 0}
FLAKY: dict[str, int] = {}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(200, json.dumps({"asks": ASKED["n"]}).encode())

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        key = os.environ.get("RAG_SERVICE_KEY")
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._send(401, json.dumps({"error": "missing or wrong API key"}).encode())
            return
        with LOCK:
            ASKED["n"] += 1
        question = str(request.get("question", ""))
        if "[flaky]" in question:
            with LOCK:
                FLAKY[question] = FLAKY.get(question, 0) + 1
                tries = FLAKY[question]
            if tries <= 2:
                self._send(500, json.dumps({"error": f"cold start ({tries})"}).encode())
                return
        if "[500]" in question:
            self._send(500, json.dumps({"error": "the vector index shard 3 is down"}).encode())
            return
        if "[slow]" in question:
            time.sleep(3)
        if "[badjson]" in question:
            self._send(200, b"{'answer': not json")
            return
        top_k = int((request.get("options") or {}).get("top_k", 2))
        hits = search(DOCS, question, top_k)
        contexts = [{"text": t, "doc_id": d, "score": s} for d, s, t in hits]
        answer = first_sentence(hits[0][2]) if hits else "I do not know."
        reply = {
            "answer": answer,
            "contexts": contexts,
            "usage": {"prompt_tokens": 50 * top_k, "completion_tokens": 12},
        }
        if "[noanswer]" in question:
            reply = {"result": "the answer went elsewhere", "contexts": contexts}
        self._send(200, json.dumps(reply).encode())


def main() -> None:
    corpus, port_file = Path(sys.argv[1]), Path(sys.argv[2])
    DOCS.update(load(corpus))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
