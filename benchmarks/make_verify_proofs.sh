#!/usr/bin/env bash
# Proofs for benchmarks/bench_verify.py, made on a GPU: ALU 2^22 @ blowup 2, 40 queries, with each
# hash, and ALU 2^26 in 16 row chunks (BLAKE3). Writes PROOF and PROOF.json (the statement file)
# into the folder given (default benchmarks/data/verify).
#   bash benchmarks/make_verify_proofs.sh DIR [blake3|chunked|poseidon2|keccak256|gpu-cpu ...]
set -u
dir=${1:-benchmarks/data/verify}; shift || true
mkdir -p "$dir"
common="--device gpu --example alu --blowup 2 --queries 40 --no-progress"
for what in "$@"; do
  start=$(date +%s.%N)
  case $what in
    blake3|poseidon2|keccak256)
      python -m jaxstark prove $common --log-rows 22 --hash "$what" --out "$dir/alu22_$what.proof" ;;
    chunked)
      python -m jaxstark prove $common --log-rows 26 --chunk-rows 22 --out "$dir/alu26_chunked.proof" ;;
    gpu-cpu)  # the same small proof on both backends: the bytes must agree
      python -m jaxstark prove --device gpu --example alu --log-rows 14 --blowup 2 --queries 84 --no-progress --out "$dir/alu14_gpu.proof" &&
      python -m jaxstark prove --device cpu --example alu --log-rows 14 --blowup 2 --queries 84 --no-progress --out "$dir/alu14_cpu.proof" &&
      cmp "$dir/alu14_gpu.proof" "$dir/alu14_cpu.proof" && echo "alu14: GPU and CPU proofs are byte-identical" ;;
  esac
  echo "$what: rc $? in $(python -c "import time; print(f'{time.time() - $start:.1f}')") s"
done
ls -l "$dir"
