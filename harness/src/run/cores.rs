//! Independent jobs on every core: std's scoped threads taking jobs from one channel, each
//! thread running one job at a time to its end. The one worker pool of the harness (`lab
//! measure`'s runs, `lab scale`, `lab heap-skip`, `lab reproduce`, the charts).
//!
//! Why not rayon: a rayon thread that waits inside a job (wasmtime compiles a module on
//! rayon's pool) runs another job meanwhile on the same thread, and gtest allows one `System`
//! per thread. `lab measure` on a rayon pool panicked with "Impossible to have multiple
//! instances of the `System`" in its first minute.

use anyhow::Result;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Mutex;

/// How many jobs run at once by default: one per core.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `f` over every job the channel delivers, on `workers` threads, until every sender is gone
/// and the channel is empty; the results in the order the jobs finished. Once a job fails no
/// new job starts and the first error is returned; the channel's receiver is dropped with it,
/// so a producer's next send fails and tells it to stop.
pub fn as_they_come<J: Send, R: Send>(
    workers: usize,
    jobs: Receiver<J>,
    f: impl Fn(J) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let jobs = Mutex::new(jobs);
    let done: Mutex<Vec<R>> = Mutex::new(Vec::new());
    let failed: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| loop {
                if failed.lock().expect("no panic holds it").is_some() {
                    return;
                }
                // The lock is held only while waiting for the next job, not while running it.
                let next = jobs.lock().expect("no panic holds it").recv();
                let Ok(job) = next else { return };
                match f(job) {
                    Ok(r) => done.lock().expect("no panic holds it").push(r),
                    Err(e) => {
                        failed.lock().expect("no panic holds it").get_or_insert(e);
                    }
                }
            });
        }
    });
    drop(jobs);
    match failed.into_inner().expect("no panic holds it") {
        Some(e) => Err(e),
        None => Ok(done.into_inner().expect("no panic holds it")),
    }
}

/// `f` over every job, one per core (each run is independent: its own backend, its own chain),
/// the results in the jobs' order. Once one fails no new job starts, and the first error is
/// returned.
pub fn on_every_core<J: Sync, R: Send>(
    jobs: &[J],
    f: impl Fn(&J) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let (send, receive) = channel();
    for i in 0..jobs.len() {
        send.send(i).expect("the receiver is here");
    }
    drop(send);
    let mut done = as_they_come(cores(), receive, |i| f(&jobs[i]).map(|r| (i, r)))?;
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Results come back in the jobs' order however the threads finish, and each job runs once.
    #[test]
    fn every_job_runs_once_and_results_keep_the_jobs_order() {
        let ran = AtomicUsize::new(0);
        let jobs: Vec<u64> = (0..200).collect();
        let out = on_every_core(&jobs, |&j| {
            ran.fetch_add(1, Ordering::Relaxed);
            // Later jobs finish first, so an unsorted result would show it.
            std::thread::sleep(std::time::Duration::from_micros(200 - j));
            Ok(j * 2)
        })
        .unwrap();
        assert_eq!(out, (0..200).map(|j| j * 2).collect::<Vec<_>>());
        assert_eq!(ran.load(Ordering::Relaxed), 200);
    }

    /// A thread runs one job at a time to its end, even when the job waits on rayon inside
    /// (as wasmtime's parallel compilation does, in gtest and in the fuel meter): no job starts
    /// on a thread inside another, which gtest's one `System` per thread needs. A rayon thread
    /// that waits runs pending work of its pool; `yield_now` asks for that at once, so on a
    /// rayon pool of the jobs' own this fails.
    #[test]
    fn a_thread_never_runs_two_jobs_at_once() {
        thread_local!(static BUSY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        let nap = || std::thread::sleep(std::time::Duration::from_millis(2));
        let jobs: Vec<u32> = (0..32).collect();
        on_every_core(&jobs, |_| {
            assert!(
                !BUSY.with(|b| b.replace(true)),
                "a job started inside another"
            );
            rayon::join(nap, nap);
            rayon::yield_now();
            BUSY.with(|b| b.set(false));
            Ok(())
        })
        .unwrap();
    }

    /// The first error stops new jobs and is the one returned; a producer's send fails after.
    /// (Without the stop, the 1,000 jobs of a millisecond all run: the bound leaves room for a
    /// failing thread descheduled for tens of milliseconds on a busy machine.)
    #[test]
    fn the_first_error_stops_every_job() {
        let started = AtomicUsize::new(0);
        let (send, receive) = channel();
        for i in 0..1000u32 {
            send.send(i).unwrap();
        }
        let err = as_they_come(2, receive, |i| {
            started.fetch_add(1, Ordering::Relaxed);
            if i == 3 {
                anyhow::bail!("job 3 failed");
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(i)
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "job 3 failed");
        assert!(
            started.load(Ordering::Relaxed) < 100,
            "jobs went on after the error"
        );
        assert!(send.send(0).is_err(), "the receiver outlived the error");
    }
}
