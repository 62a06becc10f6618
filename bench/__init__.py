"""offprompt's benchmark suite: `python -m bench` prints a table and writes `bench/results/latest.json`.

Every figure that compares two things is a ratio measured in the same run, with
the two sides interleaved, because the machines this runs on are shared and noisy.
"""
