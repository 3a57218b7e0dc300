#!/usr/bin/env bash
# The Debian packages the tests drive: Chromium (the browser tests, headless),
# and Slurm with munge (tests/test_slurm.py and chapter 9's "Submitting jobs":
# a controller and node daemons on the mini cluster; 22.05 in Debian 12,
# about 3.5 MB with --no-install-recommends). One apt-get call for both, so
# two installs never wait on dpkg's lock.
# As root it installs what is missing. Without root, Chromium missing is an
# error (the browser tests cannot run); Slurm missing is only said (the mini
# cluster needs root anyway, and its tests skip with the reason).
set -euo pipefail
want=()
command -v chromium >/dev/null || want+=(chromium)
{ command -v slurmctld >/dev/null || [ -x /usr/sbin/slurmctld ]; } || want+=(slurm-wlm)
{ command -v munged >/dev/null || [ -x /usr/sbin/munged ]; } || want+=(munge)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  for p in "${want[@]}"; do
    if [ "$p" = chromium ]; then
      echo "The browser tests need Chromium: sudo apt-get install chromium" >&2; exit 1
    fi
  done
  echo "Slurm is not installed (the Slurm tests will skip): sudo apt-get install --no-install-recommends slurm-wlm munge" >&2
  exit 0
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
