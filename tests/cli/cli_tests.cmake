# The loom binary's contract: exit codes and messages for bad input, and the
# JSON report of `loom run`.
set(EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_exit.sh)

function(cli_test name code regex)
  add_test(NAME cli.${name} COMMAND ${EXPECT} ${code} ${regex} $<TARGET_FILE:loom> ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endfunction()

cli_test(ops 0 "conv2d_transpose:" ops)
cli_test(run_json 0 "\"ok\":true" run matmul M=19 N=37 K=5 --json --threads=1)
cli_test(run_json_fields 0 "\"codegen_ms\".*\"construct_ms\".*\"gflops\".*\"hwspec\".*\"max_rel_err\".*\"measured_candidates\".*\"ok\".*\"op\".*\"params\".*\"strategy\".*\"threads\".*\"time_ms\""
         run softmax M=3 N=5 --json)
cli_test(run_text 0 "max_rel_err .* ok" run conv2d N=1 H=5 W=5 CI=2 CO=3 KH=3 KW=3 pad=1)
cli_test(run_other_spec 0 "\"hwspec\":\"haswell_avx2\".*\"ok\":true" run gelu M=3 N=11 --hwspec=haswell_avx2 --json)
cli_test(no_command 2 "usage: loom")
cli_test(unknown_command 2 "unknown command 'frobnicate'" frobnicate)
cli_test(unknown_op 2 "unknown operator 'matmull'" run matmull M=1 N=1 K=1)
cli_test(unknown_param 2 "unknown parameter 'Z' for operator matmul" run matmul M=1 N=1 K=1 Z=3)
cli_test(missing_param 2 "missing parameter K" run matmul M=1 N=1)
cli_test(non_numeric 2 "parameter N='abc' is not an integer" run matmul M=1 N=abc K=1)
cli_test(non_positive 2 "parameter M=0 must be positive" run matmul M=0 N=1 K=1)
cli_test(negative_pad 2 "pad=-1 must be non-negative" run conv2d N=1 H=5 W=5 CI=2 CO=3 KH=3 KW=3 pad=-1)
cli_test(empty_conv 2 "empty output" run conv2d N=1 H=2 W=2 CI=2 CO=3 KH=3 KW=3)
cli_test(groups 2 "groups=2 does not divide CI=3" run conv2d N=1 H=5 W=5 CI=3 CO=4 KH=3 KW=3 groups=2)
cli_test(bad_choice 2 "layout='NWHC' is not one of NHWC\\|NCHW" run conv2d N=1 H=5 W=5 CI=3 CO=4 KH=3 KW=3 layout=NWHC)
cli_test(not_key_value 2 "argument '17' is not <param>=<value>" run matmul 17 N=1 K=1)
cli_test(unknown_strategy 2 "unknown strategy 'magic'" run matmul M=2 N=2 K=2 --strategy=magic)
cli_test(bad_threads 2 "--threads='two' is not an integer" run matmul M=2 N=2 K=2 --threads=two)
cli_test(unknown_hwspec 2 "unknown hwspec 'cray1'" run matmul M=2 N=2 K=2 --hwspec=cray1)
cli_test(gpu_hwspec 0 "\"executed_on\":\"opencl-cpu\".*\"ok\":true" run matmul M=2 N=3 K=5 --hwspec=h100 --json)
cli_test(gpu_bad_capability 2 "field 'gpu.compute_capability': value 'nine' is not of the form MAJOR.MINOR"
         run matmul M=2 N=3 K=5 --hwspec=${CMAKE_CURRENT_SOURCE_DIR}/cli/bad_gpu_spec.yaml)
cli_test(bad_hwspec_file 2 "bad_spec.yaml: field 'cpu.vector_bits': value '100'"
         run matmul M=2 N=2 K=2 --hwspec=${CMAKE_CURRENT_SOURCE_DIR}/cli/bad_spec.yaml)
cli_test(unknown_option 2 "unknown option '--fast'" run matmul M=2 N=2 K=2 --fast)
cli_test(unknown_workload 2 "unknown workload 'resnet'" workload resnet)

# `loom tune`: the JSON contract, bad input, and surviving a kill.
cli_test(tune_json 0 "\"construct_ms\".*\"errors\".*\"max_rel_err\".*\"measured\".*\"ok\":true.*\"records\".*\"resumed\".*\"seed_gflops\".*\"strategy\":\"hybrid\".*\"threads\":1.*\"trials\":8.*\"tune_s\""
         tune matmul M=20 N=24 K=16 --threads=1 --trials=8 --batch=4 --json)
cli_test(tune_random 0 "\"ok\":true" tune dense M=9 N=16 K=8 epilogue=bias_gelu --threads=1 --trials=4 --strategy=random --json)
cli_test(tune_no_op 2 "needs an operator name" tune --trials=4)
cli_test(tune_bad_trials 2 "--trials=0 is outside \\[1, 100000\\]" tune matmul M=2 N=2 K=2 --trials=0)
cli_test(tune_bad_scheduler 2 "unknown scheduler 'lifo'" tune --workload=bert --scheduler=lifo)
cli_test(tune_bad_workload 2 "unknown workload 'vgg'" tune --workload=vgg)
add_test(NAME cli.tune_bad_faults COMMAND ${CMAKE_COMMAND} -E env LOOM_FAULTS=melt=1
         ${EXPECT} 2 "LOOM_FAULTS kind 'melt' is unknown" $<TARGET_FILE:loom> tune matmul M=2 N=2 K=2)
set_tests_properties(cli.tune_bad_faults PROPERTIES LABELS cli)
cli_test(run_records_missing 0 "no correct record" run matmul M=4 N=4 K=4 --records=/nonexistent/records.jsonl)
add_test(NAME cli.tune_kill_resume COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/tune_kill_resume.sh $<TARGET_FILE:loom>)
set_tests_properties(cli.tune_kill_resume PROPERTIES LABELS cli TIMEOUT 300)

# Hardening: ranges, repeated flags, huge arguments, paths that are not files.
cli_test(threads_beyond_cpus 0 "note: threads=1000 clamped to the [0-9]+ CPUs this process may use" run matmul M=64 N=64 K=64 --threads=1000)
cli_test(threads_huge 2 "--threads=2147483647 is outside \\[0, 4096\\]" run matmul M=64 N=64 K=64 --threads=2147483647)
cli_test(walk_steps_huge 2 "--walk-steps=2147483647 is outside \\[1, 20000\\]" run matmul M=8 N=8 K=8 --strategy=construct --walk-steps=2147483647)
cli_test(top_k_huge 2 "--top-k=1000 is outside \\[1, 100\\]" run matmul M=8 N=8 K=8 --strategy=construct --top-k=1000)
cli_test(repeated_flag 2 "option --threads given twice" run matmul M=8 N=8 K=8 --threads=1 --threads=2)
cli_test(hwspec_directory 2 "exists but is a directory" run matmul M=8 N=8 K=8 --hwspec=${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME cli.hwspec_show_and_host_cache
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/hwspec_show_and_host_cache.sh $<TARGET_FILE:loom>)
set_tests_properties(cli.hwspec_show_and_host_cache PROPERTIES LABELS cli TIMEOUT 120)
cli_test(hwspecs_show_unknown 2 "unknown hwspec 'cray1'" hwspecs show cray1)
cli_test(hwspecs_show_arity 2 "takes one spec name or file" hwspecs show)
add_test(NAME cli.huge_argument COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/huge_argument.sh $<TARGET_FILE:loom>)
set_tests_properties(cli.huge_argument PROPERTIES LABELS cli)
cli_test(beyond_memory 2 "matmul needs about [0-9]+ GiB .* but this process can get" run matmul M=65536 N=65536 K=65536)

# `loom dynamic`: the JSON contract, bad input, and the kernel cache across processes.
add_test(NAME cli.dynamic_json_fresh_cache COMMAND ${CMAKE_COMMAND} -E rm -rf ${CMAKE_CURRENT_BINARY_DIR}/dynamic_json_cache)
set_tests_properties(cli.dynamic_json_fresh_cache PROPERTIES LABELS cli FIXTURES_SETUP dynamic_json_cache)
cli_test(dynamic_json 0 "\"background_compiles\".*\"calls\":\\[\\{\"call_ms\".*\"served_by\":\"generic\".*\"value\":7\\}.*\"cold_start_ms\".*\"compiles_on_critical_path\":1.*\"dim\":\"M\".*\"dispatch_ns\".*\"ok\":true.*\"per_value\":\\[\\{\"generic_ms\".*\"ratio\".*\"specialized_ms\".*\"static_ms\".*\"value\":7"
         dynamic dense N=16 K=9 --dim=M --values=7,30,7 --threads=1 --repeats=1 --json --cache-dir=${CMAKE_CURRENT_BINARY_DIR}/dynamic_json_cache)
set_tests_properties(cli.dynamic_json PROPERTIES FIXTURES_REQUIRED dynamic_json_cache)
cli_test(dynamic_no_dim 2 "--dim=NAME is required" dynamic matmul N=4 K=4 --values=3)
cli_test(dynamic_bad_dim 2 "'Q' is not a size parameter of operator matmul" dynamic matmul N=4 K=4 --dim=Q --values=3)
cli_test(dynamic_dim_given 2 "parameter M is given a value and declared symbolic" dynamic matmul M=2 N=4 K=4 --dim=M --values=3)
cli_test(dynamic_conv 2 "cannot be symbolic" dynamic conv2d N=1 W=5 CI=2 CO=3 KH=3 KW=3 --dim=H --values=5)
cli_test(dynamic_bad_value 2 "--values=0 is outside" dynamic matmul N=4 K=4 --dim=M --values=3,0)
cli_test(dynamic_bad_cpu 2 "CPU 4000 is not one this process may run on" dynamic matmul N=4 K=4 --dim=M --values=3 --compile-cpus=4000)
add_test(NAME cli.dynamic_cache COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/dynamic_cache.sh $<TARGET_FILE:loom>)
set_tests_properties(cli.dynamic_cache PROPERTIES LABELS cli TIMEOUT 300)
