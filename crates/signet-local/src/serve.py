"""Serve a GGUF model with llama.cpp's own HTTP server, embedded in the PyPI package `xllamacpp`.

Written into the cache and started by signet-local's `LlamaCpp::serve`; the server speaks the
OpenAI API on 127.0.0.1:<port> until this process gets SIGTERM or SIGINT, or its parent dies.
"""

import argparse
import ctypes
import os
import signal
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the model name clients send")
    parser.add_argument(
        "--check-alias",
        help="a second name, listed by /v1/models, by which the starter knows its own server",
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, required=True, help="context tokens, all slots together")
    parser.add_argument("--slots", type=int, default=1, help="requests served in parallel")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--template", help="a Jinja chat template file (default: the model's own)")
    parser.add_argument(
        "--slot-dir",
        help="where POST /slots/N?action=save|restore keeps its files (off without it)",
    )
    parser.add_argument(
        "--embeddings",
        action="store_true",
        help="also answer /v1/embeddings (mean pooling; chat keeps working)",
    )
    args = parser.parse_args()

    # Never outlive the program that started us, even if it is killed without cleaning up.
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (AttributeError, OSError):
        pass

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias} | ({args.check_alias} if args.check_alias else set())
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # HTTP threads: clients keep idle connections open, and each holds a thread; with few
    # threads, new requests wait for a keep-alive to expire instead of queueing for a slot.
    params.n_threads_http = max(64, 4 * args.slots)
    params.use_jinja = True
    if args.slot_dir:
        # llama.cpp appends the file name to this path as it is.
        params.slot_save_path = os.path.join(args.slot_dir, "")
    if args.embeddings:
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    if args.template:
        with open(args.template, encoding="utf-8") as template:
            params.chat_template = template.read()

    stop = [signal.SIGTERM, signal.SIGINT]
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    server = xllamacpp.Server(params)
    print(f"signet-local: serving {args.model} at {server.listening_address}", flush=True)
    signal.sigwait(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
