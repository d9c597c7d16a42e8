"""hcops-prof: where the time of a run goes, from its verbose log, and what
it would cost on HCOps and its peers (tools/hcops-prof, man hcops-prof).

logparse  the HCOPS_VERBOSE and ONEDNN_VERBOSE lines, as records
cost      flops and bytes of a record, from its shape
machine   this machine's measured peaks (hcops-peak, hcops-stream), cached
report    the table, the CSV and the PNG breakdown
project   replays of the distinct calls through HCOps and its peers
cli       the command line
"""
