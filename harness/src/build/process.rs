//! Builds die with the lab.
//!
//! Every `cargo` a build starts runs under a *supervisor*: the `lab` executable itself, run
//! again in a process group of its own (as rustc runs it as a linker, [`crate::build::relink`]),
//! which starts `cargo` in that group, waits for it, and passes its exit on. Whatever `cargo`
//! starts (`rustc`s, build scripts, the linker) is in the group too, so one `kill` of the group
//! ends the whole build. The two ways the lab can end:
//! - **SIGINT, SIGTERM, SIGHUP** (Ctrl-C, `kill`, a closed terminal): the lab's handler
//!   ([`end_builds_on_signals`]) kills every build group it started, then dies of the same
//!   signal, as it would have without a handler.
//! - **SIGKILL** runs no handler in the lab; the kernel sends each supervisor SIGTERM as its
//!   parent dies (`PR_SET_PDEATHSIG`), and the supervisor kills its group. Without it, an
//!   orphaned `cargo` went on building, holding the target directory's lock.
//!
//! What a build must change in someone else's crate is never done there at all (see
//! [`crate::build::external`]): this module only keeps the lab's own processes from outliving
//! it. Where the `lab` executable cannot be found (the library's own unit tests), `cargo` runs
//! in a group of its own with the parent-death signal itself, without a supervisor.

use std::process::{Command, ExitStatus, Output};
use std::sync::atomic::{AtomicI32, Ordering};

/// Set on a supervisor's command: the lab's pid. Its presence is what tells `lab` it was run
/// as a supervisor; the pid closes the race of a lab that died before the supervisor asked to
/// hear of it.
const SUPERVISE_ENV: &str = "GALLOC_LAB_SUPERVISE_FOR";

/// Process groups of the builds running now (0: a free slot). A fixed array of atomics
/// because the signal handler may read it, and may neither lock nor allocate. More builds at
/// once than slots would only lose the handler's kill for the extra ones; the lab runs one
/// per core.
static GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// Runs `cmd` to completion (as [`Command::output`]) under a supervisor in a process group of
/// its own, which the lab kills if it is stopped by a signal and which kills itself if the lab
/// dies of SIGKILL.
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    run(cmd, true)
}

/// [`output`] with the command's output going where the lab's goes (as [`Command::status`]):
/// for builds whose progress a person watches (`lab replay`'s native replayer, the node
/// backend's `lab-node`).
pub fn status(cmd: &mut Command) -> std::io::Result<ExitStatus> {
    run(cmd, false).map(|out| out.status)
}

fn run(cmd: &mut Command, capture: bool) -> std::io::Result<Output> {
    let mut supervised = supervised(cmd);
    let run = supervised.as_mut().unwrap_or(cmd);
    group_dying_with_lab(run);
    if capture {
        run.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
    }
    let mut child = run.spawn()?;
    let slot = register(child.id());
    // Read while it runs (a full pipe would stop it), and apart from waiting for it: the pipes
    // stay open as long as anything in its group holds them.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let status = child.wait();
    // The group outlives its leader: a supervisor killed on its own (not through the lab) left
    // its cargo building, holding the target directory's lock. Whatever is left of the group
    // ends with it (after a normal exit nothing is left, and the group cannot have been reused
    // while anything of it was).
    end_group(child.id());
    if let Some(slot) = slot {
        GROUPS[slot].store(0, Ordering::SeqCst);
    }
    Ok(Output {
        status: status?,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Kills what is left of the process group led by `pid`.
fn end_group(pid: u32) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: `kill` of a group id that is ours: the child led it ([`group_dying_with_lab`]).
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// `cmd` run by the `lab` executable as its supervisor: the same program, arguments,
/// environment and directory. `None` where there is no `lab` executable to run.
fn supervised(cmd: &Command) -> Option<Command> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let lab = crate::build::relink::linker()?;
    let mut s = Command::new(lab);
    s.arg(cmd.get_program()).args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => s.env(key, value),
            None => s.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        s.current_dir(dir);
    }
    s.env(SUPERVISE_ENV, std::process::id().to_string());
    Some(s)
}

/// Makes the child of `cmd` lead a process group of its own and get a signal when the lab
/// dies: SIGTERM for a supervisor (which then kills its group), SIGKILL for a bare `cargo`.
#[cfg(target_os = "linux")]
fn group_dying_with_lab(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let supervisor = cmd
        .get_envs()
        .any(|(k, v)| k == SUPERVISE_ENV && v.is_some());
    let signal = if supervisor {
        libc::SIGTERM
    } else {
        libc::SIGKILL
    };
    // SAFETY: `getpid` has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: `setpgid`, `prctl`, `getppid` and `_exit` are async-signal-safe, as code between
    // fork and exec must be; nothing here allocates or locks.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The lab died between the fork and the prctl: the signal would never come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Elsewhere a process group of its own, which the signal handler can still end.
#[cfg(all(unix, not(target_os = "linux")))]
fn group_dying_with_lab(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

#[cfg(not(unix))]
fn group_dying_with_lab(_cmd: &mut Command) {}

fn register(pid: u32) -> Option<usize> {
    let pid = i32::try_from(pid).ok()?;
    (0..GROUPS.len()).find(|&i| {
        GROUPS[i]
            .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

/// When `lab` was started as a build's supervisor: runs the command its arguments name in its
/// own process group, ends the group on SIGTERM, SIGINT or SIGHUP (SIGTERM is what the kernel
/// sends when the lab dies), and returns the command's exit code. `None` otherwise.
#[cfg(target_os = "linux")]
pub fn serve_as_supervisor() -> Option<i32> {
    let lab: i32 = std::env::var(SUPERVISE_ENV).ok()?.parse().ok()?;
    // SAFETY: `getppid` has no preconditions.
    if unsafe { libc::getppid() } != lab {
        return Some(1); // the lab is gone already
    }
    extern "C" fn end_group(_: libc::c_int) {
        // SAFETY: `kill` is async-signal-safe; pid 0 is this process's own group (the build,
        // this supervisor included).
        unsafe { libc::kill(0, libc::SIGKILL) };
    }
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only calls `kill`, which is async-signal-safe.
        unsafe {
            libc::signal(
                signal,
                end_group as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    let mut args = std::env::args_os().skip(1);
    let program = args.next()?;
    let status = Command::new(&program)
        .args(args)
        .env_remove(SUPERVISE_ENV)
        .status();
    Some(match status {
        Ok(status) => code_of(status),
        Err(e) => {
            eprintln!(
                "error: lab, supervising a build, cannot run {}: {e}",
                std::path::Path::new(&program).display()
            );
            1
        }
    })
}

#[cfg(not(target_os = "linux"))]
pub fn serve_as_supervisor() -> Option<i32> {
    None
}

/// An exit status as an exit code, as a shell gives it: 128 + the signal that ended it.
fn code_of(status: ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    status.code().unwrap_or(1)
}

/// Installs the handler that ends every running build when the lab gets SIGINT, SIGTERM or
/// SIGHUP; the lab then dies of that signal (its exit status says so, as without a handler).
/// Called once, first thing, by `lab`'s `main`.
#[cfg(unix)]
pub fn end_builds_on_signals() {
    extern "C" fn on_signal(signal: libc::c_int) {
        for group in &GROUPS {
            let pid = group.load(Ordering::SeqCst);
            if pid > 0 {
                // SAFETY: `kill` is async-signal-safe; a negative pid names the group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        // SAFETY: `signal` and `raise` are async-signal-safe: back to the default action, and
        // the same signal again, so the lab ends as it would have without this handler.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only calls async-signal-safe functions and reads atomics.
        unsafe {
            libc::signal(
                signal,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
}

#[cfg(not(unix))]
pub fn end_builds_on_signals() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A build runs in a group of its own, not its parent's (so that one `kill` reaches
    /// everything it starts, and nothing else), and its slot is free once it is done. (The supervisor and the kills are the
    /// suite's: `tests/suite/interrupts.rs`.)
    #[test]
    fn a_build_runs_in_its_own_group_and_is_forgotten_when_done() {
        let out = output(Command::new("sh").args(["-c", "echo $$ $(cut -d' ' -f5 /proc/$$/stat)"]))
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields.len(), 2, "{text}");
        let group: i32 = fields[1].parse().unwrap();
        // SAFETY: `getpgrp` has no preconditions.
        let ours = unsafe { libc::getpgrp() };
        assert_ne!(
            group, ours,
            "the build runs in the test's own group: {text}"
        );
        assert!(GROUPS.iter().all(|g| g.load(Ordering::SeqCst) != group));
    }

    /// A build's leader killed on its own (as a supervisor can be, apart from the lab) leaves
    /// nothing of its group running: the lab ends the rest, and is not held up waiting for it.
    #[test]
    fn what_a_killed_leader_leaves_in_its_group_is_ended() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 90 & echo $! > {}; kill -KILL $$", pid_file.display());
        let started = std::time::Instant::now();
        let out = output(Command::new("sh").args(["-c", &script])).unwrap();
        assert_eq!(code_of(out.status), 128 + libc::SIGKILL);
        assert!(started.elapsed().as_secs() < 45, "{:?}", started.elapsed());
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Reaped by init once killed; give it a moment.
        let gone = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            // SAFETY: signal 0 only asks whether the process exists.
            let alive = unsafe { libc::kill(pid, 0) } == 0;
            !alive
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        });
        assert!(gone, "the group's `sleep` ({pid}) outlived its leader");
    }

    #[test]
    fn an_exit_by_signal_is_128_plus_the_signal() {
        let status = Command::new("sh")
            .args(["-c", "kill -TERM $$"])
            .status()
            .unwrap();
        assert_eq!(code_of(status), 128 + libc::SIGTERM);
        let status = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
        assert_eq!(code_of(status), 3);
    }
}
