//! Workers' process groups: the OS calls on worker processes that std
//! does not offer, each with its `SAFETY` note.
//!
//! A worker is spawned as the leader of a process group of its own
//! (`CommandExt::process_group(0)`, no `unsafe`), so whatever a plugin
//! forks stays in that group unless it leaves it (`setsid`, `setpgid`).
//! The parent kills the whole group when it is done with a worker, and
//! looks at a worker's exit without reaping it: until the leader is
//! reaped its pid, which is the group's id, cannot name another process
//! or group, so killing `-pid` is never a stray signal.
//!
//! Elsewhere than Unix there are no process groups: the parent kills the
//! worker alone and asks std whether it has exited.

/// Kills the process group `pgid` with SIGKILL: a worker and every
/// process a plugin forked in it that stayed in its group.
///
/// Call it only while the worker, the group's leader, is a child of this
/// process that has not been reaped (see the module's note).
#[cfg(unix)]
pub(crate) fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // `kill(-1)` would signal every process we may signal, `kill(0)` our
    // own group: neither is a worker's group.
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill() takes two integers and touches no memory of ours. The
    // negative pid names one process group, never -1 (checked above), and
    // that group is the worker's, whose leader is still our unreaped child.
    #[allow(unsafe_code)]
    let _ = unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// `true` once our child `pid` has exited or was killed, without reaping
/// it: std's `Child::wait` still collects its status afterwards, and its
/// pid (its group's id) stays reserved until then.
#[cfg(unix)]
pub(crate) fn has_ended(pid: u32) -> bool {
    // `id_t` is `u32` on most systems, where this cannot fail.
    #[allow(irrefutable_let_patterns)]
    let Ok(pid) = libc::id_t::try_from(pid) else {
        return false;
    };
    // SAFETY: siginfo_t is plain data (integers and unions of integers
    // and pointers that nothing dereferences); all zeroes is a valid value.
    #[allow(unsafe_code)]
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes at most one siginfo_t, into `info`, which we
    // own for the whole call. WNOHANG makes it return at once, WNOWAIT
    // leaves the child waitable, so nothing is reaped here.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // With WNOHANG and no state change the struct stays as we zeroed it;
    // an ended child fills it in, SIGCHLD first (si_signo is a plain
    // field on every Unix, unlike si_pid).
    rc == 0 && info.si_signo == libc::SIGCHLD
}

/// Kills this process's own group, this process included, if it leads
/// one: a worker whose parent is done with it or gone takes whatever its
/// plugins forked with it. A worker started by hand, in a shell's job
/// group, does nothing here.
#[cfg(unix)]
pub(crate) fn end_own_group() {
    // SAFETY: getpgrp() takes nothing, touches no memory and cannot fail.
    #[allow(unsafe_code)]
    let group = unsafe { libc::getpgrp() };
    let leads = u32::try_from(group).is_ok_and(|g| g == std::process::id());
    if leads {
        // SAFETY: kill() takes two integers and touches no memory of ours;
        // 0 names our own process group, which this process leads
        // (checked above), so it holds only this worker and its
        // descendants.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::kill(0, libc::SIGKILL) };
    }
}

/// Without process groups a worker is killed alone (by the caller).
#[cfg(not(unix))]
pub(crate) fn kill_group(_pgid: u32) {}

/// Without process groups nothing else is ended with the worker.
#[cfg(not(unix))]
pub(crate) fn end_own_group() {}

// The check of the forked process reads /proc.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn an_ended_child_is_seen_without_being_reaped_and_its_group_dies() {
        // `sh` leads its group and forks a `sleep` that stays in it.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; exit 3"])
            .stdout(std::process::Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().expect("sh");
        let pid = child.id();
        let start = Instant::now();
        while !has_ended(pid) {
            assert!(start.elapsed() < Duration::from_secs(10), "sh never ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Still a zombie, not reaped: asking again says the same.
        assert!(has_ended(pid));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the sleeper's pid");
        let sleeper: u32 = line.trim().parse().expect("a pid");
        kill_group(pid);
        let status = child.wait().expect("reaped by std");
        assert_eq!(status.code(), Some(3));
        // The sleeper was killed (and, orphaned, reaped by init).
        let start = Instant::now();
        while std::fs::read_to_string(format!("/proc/{sleeper}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        }) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the forked sleep {sleeper} survived its group"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
