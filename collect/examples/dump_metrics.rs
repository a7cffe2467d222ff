use gpumodel_collect::cupti::host::{HostProfiler, ProfilerKind};
use gpumodel_models::counters::CounterMap;
fn passes(chip: &str, ms: &[String]) -> Option<usize> {
    let mut h = HostProfiler::new(chip, ProfilerKind::PmSampling, None).ok()?;
    let r: Vec<&str> = ms.iter().map(|s| s.as_str()).collect();
    h.add_metrics(&r).ok()?;
    h.num_passes().ok()
}
fn main() {
    let cands: &[(&str, &[&[&str]])] = &[
        ("inst_executed", &[&["sm__inst_executed_realtime.sum"], &["sm__inst_executed.sum"], &["smsp__inst_executed.sum"]]),
        ("gld_request", &[&["sm__inst_executed_pipe_lsu.sum"], &["smsp__inst_executed_pipe_lsu.sum"]]),
        ("l1_global_load_hit", &[&["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"]]),
        ("l1_global_load_miss", &[&["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum"]]),
        ("global_store_transaction", &[&["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]]),
        ("shared_load", &[&["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]]),
        ("l1_shared_bank_conflict", &[&["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"], &["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]]),
        ("tex0_cache_sector_queries", &[&["l1tex__t_sectors_pipe_tex_mem_texture.sum"]]),
        ("tex0_cache_sector_misses", &[&["l1tex__t_sectors_pipe_tex_mem_texture_lookup_miss.sum"]]),
        ("branch", &[&["sm__inst_executed_pipe_cbu.sum"], &["smsp__inst_executed_pipe_cbu.sum"]]),
        ("local_load", &[&["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"]]),
        ("local_store", &[&["l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"]]),
        ("inst_fp_32", &[&["sm__inst_executed_pipe_fma_realtime.sum"], &["sm__inst_executed_pipe_fmaheavy_realtime.sum", "sm__inst_executed_pipe_fmalite_realtime.sum"], &["smsp__inst_executed_pipe_fma.sum"]]),
        ("inst_integer", &[&["sm__inst_executed_pipe_alu_realtime.sum"], &["smsp__inst_executed_pipe_alu.sum"]]),
        ("inst_special", &[&["sm__inst_executed_pipe_xu_realtime.sum"], &["smsp__inst_executed_pipe_xu.sum"]]),
        ("inst_fp_64", &[&["smsp__inst_executed_pipe_fp64.sum"]]),
        ("dram_read_bytes", &[&["dram__bytes_read.sum"]]),
        ("dram_write_bytes", &[&["dram__bytes_write.sum"]]),
    ];
    for chip in CounterMap::builtin_chips() {
        let mut acc: Vec<String> = vec![];
        let mut out = vec![];
        for (c, alts) in cands {
            let mut done = false;
            for alt in *alts {
                let mut trial = acc.clone();
                trial.extend(alt.iter().map(|s| s.to_string()));
                if passes(chip, &trial) == Some(1) {
                    acc = trial;
                    out.push(format!("{c} = {:?}", alt));
                    done = true;
                    break;
                }
            }
            if !done { out.push(format!("#DROP {c}")); }
        }
        println!("CHIP {chip}\n{}", out.join("\n"));
    }
}
