//! Checks on the PTX the compiler emitted, proving that each suite function kept the work it exists for.

/// The [`ptx_has`] pattern for a branch that can diverge: a predicated, non-`.uni` `bra` whose predicate is
/// computed (through any chain of instructions) from the thread's lane — `%tid.*` or `%laneid`. A loop's
/// back-edge on a kernel parameter does not match it; a plain `@%p bra` search would.
pub const LANE_DEPENDENT_BRANCH: &str = "@%p(lane) bra";

/// Whether `ptx` contains `pattern`. `@%p bra` matches any predicated branch (`@%p12 bra`, `@!%p3 bra`);
/// [`LANE_DEPENDENT_BRANCH`] only one whose predicate depends on the lane.
pub fn ptx_has(ptx: &str, pattern: &str) -> bool {
    if pattern == LANE_DEPENDENT_BRANCH {
        return has_lane_dependent_branch(ptx);
    }
    if pattern == "@%p bra" {
        // `bra.uni` is a branch the compiler knows to be uniform; a divergent one is a plain `bra`.
        return ptx.lines().map(str::trim_start).any(|l| {
            let mut words = l.split_whitespace();
            let guard = words.next().unwrap_or("");
            (guard.starts_with("@%p") || guard.starts_with("@!%p")) && words.next() == Some("bra")
        });
    }
    ptx.contains(pattern)
}

/// The guard register of a predicated plain `bra` line (`@%p3 bra $L;` or `@!%p3 bra $L;` → `%p3`).
fn branch_guard(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let guard = words.next()?.strip_prefix('@')?;
    let guard = guard.strip_prefix('!').unwrap_or(guard);
    (guard.starts_with("%p") && words.next() == Some("bra")).then_some(guard)
}

/// The registers and special registers named in a PTX operand list (`%r12`, `%rd3`, `%tid.x`, `%laneid`).
fn ptx_registers(operands: &str) -> impl Iterator<Item = &str> {
    operands
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '.' || c == '_'))
        .filter(|t| t.starts_with('%'))
}

/// Taint analysis over one function's PTX: which registers hold values computed from the lane
/// (`%tid.*`, `%laneid`), iterated to a fixed point so values carried around loops are covered; then
/// whether some predicated `bra` tests such a register. Stores (`st.*`) write memory, not a register, and
/// are skipped; memory is not tracked (a value stored and reloaded loses its taint, so this can miss a
/// divergent branch but does not invent one).
fn has_lane_dependent_branch(ptx: &str) -> bool {
    // (destinations, sources) of every register-writing instruction.
    let mut defs: Vec<(Vec<&str>, Vec<&str>)> = Vec::new();
    let mut guards: Vec<&str> = Vec::new();
    for line in ptx.lines().map(str::trim) {
        if let Some(g) = branch_guard(line) {
            guards.push(g);
            continue;
        }
        let body = match line.strip_prefix('@') {
            // A predicated non-branch instruction: drop the guard, keep the instruction.
            Some(rest) => rest.split_once(char::is_whitespace).map_or("", |(_, i)| i.trim_start()),
            None => line,
        };
        let Some((opcode, operands)) = body.split_once(char::is_whitespace) else { continue };
        if opcode.starts_with('.') || opcode.starts_with("//") || opcode.starts_with("st.") || opcode == "bra"
        {
            continue;
        }
        let operands = operands.trim_end_matches(';');
        // The destination is the first operand (`setp` may name two: `%p1|%p2`; vector loads a brace list
        // `{%r1, %r2}`).
        let operands = operands.trim_start();
        let split = if operands.starts_with('{') {
            operands.find('}').map(|i| (&operands[..=i], operands[i + 1..].trim_start_matches(',')))
        } else {
            operands.split_once(',')
        };
        let (dst, src) = split.unwrap_or((operands, ""));
        let dst: Vec<&str> = ptx_registers(dst).collect();
        if !dst.is_empty() {
            defs.push((dst, ptx_registers(src).collect()));
        }
    }
    let lane = |r: &str| r.starts_with("%tid.") || r == "%laneid";
    let mut tainted: std::collections::HashSet<&str> = std::collections::HashSet::new();
    loop {
        let before = tainted.len();
        for (dst, src) in &defs {
            if src.iter().any(|r| lane(r) || tainted.contains(r)) {
                tainted.extend(dst.iter().copied());
            }
        }
        if tainted.len() == before {
            break;
        }
    }
    guards.iter().any(|g| tainted.contains(g))
}

/// The PTX text of one `.entry` (from its header to the next `.entry` or the end).
pub fn ptx_function<'a>(ptx: &'a str, entry: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {entry}("))?;
    let rest = &ptx[start..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |e| e + 1);
    Some(&rest[..end])
}
