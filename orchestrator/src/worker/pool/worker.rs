//! One worker process: its pipes, its frames and its end.

use super::*;

/// One worker process.
pub(super) struct Worker {
    pub(super) child: Mutex<Child>,
    pub(super) pid: u32,
    /// Set once `child` is reaped: its pid may then name another process,
    /// so its group is never signalled again.
    pub(super) reaped: bool,
    pub(super) stdin: Arc<Mutex<BufWriter<ChildStdin>>>,
    /// The frames its reader thread read from its stdout.
    pub(super) frames: mpsc::Receiver<Frame>,
    /// The largest frame body the reader accepts, set per request.
    pub(super) max_body: Arc<AtomicU64>,
    pub(super) stderr: Arc<StderrTail>,
    pub(super) seq: u64,
    /// The last job it completed.
    pub(super) last: Option<Job>,
    /// The latest job that left threads running (or every job, where
    /// threads are not counted), with how many.
    pub(super) suspect: Option<(Job, Option<u32>)>,
}

impl Worker {
    pub(super) fn spawn(program: &Path) -> Result<Worker, WorkerEnd> {
        let mut cmd = Command::new(program);
        cmd.arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: a Ctrl-C on the terminal reaches koas
        // only, which forwards it as a cancellation, and what a plugin
        // forks can be killed with the worker.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .spawn()
            .map_err(|e| WorkerEnd::start(format!("{}: {e}", program.display())))?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            group::kill_group(pid);
            let _ = child.kill();
            let _ = child.wait();
            return Err(WorkerEnd::start("its pipes were not created".into()));
        };
        let max_body = Arc::new(AtomicU64::new(0));
        let (frames_in, frames) = mpsc::sync_channel::<Frame>(FRAMES_AHEAD);
        let limit = max_body.clone();
        // The pipe is read on a thread of its own, so that the request loop
        // can stop waiting when the worker is dead but a process it forked
        // (and that left its group) keeps the pipe open.
        let reader = std::thread::Builder::new()
            .name("koas-worker-stdout".into())
            .spawn(move || {
                let mut stdout = BufReader::new(stdout);
                loop {
                    let frame = read_frame_with(&mut stdout, || limit.load(Ordering::SeqCst));
                    let last = !matches!(frame, Ok(Some(_)));
                    if frames_in.send(frame).is_err() || last {
                        break;
                    }
                }
            });
        let worker = Worker {
            pid,
            child: Mutex::new(child),
            reaped: false,
            stdin: Arc::new(Mutex::new(BufWriter::new(stdin))),
            frames,
            max_body,
            stderr: StderrTail::drain(stderr),
            seq: 0,
            last: None,
            suspect: None,
        };
        if let Err(e) = reader {
            return Err(worker.end(EndCause::Start(format!(
                "cannot start a thread to read it: {e}"
            ))));
        }
        let not_a_worker = |what: String| {
            format!(
                "{} is not a koas worker ({what}); kernels run in worker processes of the koas executable, or with --in-process",
                program.display()
            )
        };
        match worker.frames.recv_timeout(DESCRIBE_TIMEOUT) {
            Ok(Ok(Some((FromWorker::Hello { protocol, abi }, _))))
                if protocol == PROTOCOL_VERSION && abi == ABI_VERSION =>
            {
                Ok(worker)
            }
            Ok(Ok(Some((FromWorker::Hello { protocol, abi }, _)))) => {
                let end = worker.end(EndCause::Start(not_a_worker(format!(
                    "it speaks worker protocol {protocol} and plugin ABI {abi}, this koas {PROTOCOL_VERSION} and {ABI_VERSION}"
                ))));
                Err(end)
            }
            Ok(Ok(Some(_))) => {
                Err(worker.end(EndCause::Start(not_a_worker("it did not greet".into()))))
            }
            Ok(Ok(None)) | Ok(Err(FrameError::Broken)) | Err(RecvTimeoutError::Disconnected) => {
                Err(worker.end(EndCause::Start(not_a_worker(
                    "it ended without greeting".into(),
                ))))
            }
            Err(RecvTimeoutError::Timeout) => Err(worker.end(EndCause::Start(not_a_worker(
                format!("it did not greet within {} s", DESCRIBE_TIMEOUT.as_secs()),
            )))),
            Ok(Err(FrameError::Malformed(m))) => {
                Err(worker.end(EndCause::Start(not_a_worker(format!("it printed {m}")))))
            }
        }
    }

    /// `true` once the worker has exited or was killed (not reaped).
    pub(super) fn has_ended(&self) -> bool {
        worker_ended(&self.child, self.pid)
    }

    /// Records a completed job and the threads it left running.
    pub(super) fn served(&mut self, job: Job, left_threads: Option<u32>) {
        if left_threads != Some(0) {
            self.suspect = Some((job.clone(), left_threads));
        }
        self.last = Some(job);
    }

    /// The job to blame for a death outside of any job: the latest that
    /// left threads running, else the last one.
    pub(super) fn blamed(&self) -> Option<(Job, Option<u32>)> {
        self.suspect
            .clone()
            .or_else(|| self.last.clone().map(|job| (job, Some(0))))
    }

    /// Kills the worker and its process group, reaps it and describes its
    /// end.
    pub(super) fn end(mut self, cause: EndCause) -> WorkerEnd {
        // Even a worker that died on its own: what it forked dies with it.
        self.kill();
        let status: Option<ExitStatus> = self.child.lock().ok().and_then(|mut c| c.wait().ok());
        self.reaped = true;
        // A process that left the group may hold the pipe open: wait a
        // little only.
        self.stderr.wait_closed(Duration::from_millis(500));
        #[cfg(unix)]
        let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
        #[cfg(not(unix))]
        let signal = None;
        WorkerEnd {
            cause,
            pid: Some(self.pid),
            signal,
            exit_code: status.and_then(|s| s.code()),
            stderr_tail: self.stderr.request_text(),
        }
    }

    /// A worker found dead after its work: its end and the job blamed.
    /// `None` for a worker that never completed a job.
    pub(super) fn late_death(self, noticed: Noticed) -> Option<LateDeath> {
        match self.blamed() {
            Some(blamed) => Some(self.late_death_of(blamed, noticed)),
            None => {
                let _ = self.end(EndCause::Died);
                None
            }
        }
    }

    /// A worker found dead after its work, blamed on `blamed` (a job and
    /// the threads it left running).
    pub(super) fn late_death_of(self, blamed: (Job, Option<u32>), noticed: Noticed) -> LateDeath {
        let end = self.end(EndCause::Died);
        let (blamed, left_threads) = blamed;
        LateDeath {
            blamed,
            left_threads,
            noticed,
            end,
        }
    }

    pub(super) fn kill(&self) {
        if !self.reaped {
            kill(&self.child, self.pid);
        }
    }

    /// Sends `header` with `body` and reads frames until `handle` takes
    /// one as the answer, under a watchdog: kills the worker when the
    /// timeout is spent, forwards a cancellation, and notices the worker's
    /// exit even while a process it forked keeps its pipe open.
    pub(super) fn exchange<T>(
        &self,
        header: &ToWorker,
        body: &dyn Body,
        max_body: u64,
        watch: Watch<'_>,
        mut handle: impl FnMut(FromWorker, Vec<u8>) -> Option<T>,
    ) -> Result<T, EndCause> {
        self.max_body.store(max_body, Ordering::SeqCst);
        let ended = Mutex::new(None);
        let (stop, stopped) = mpsc::channel();
        std::thread::scope(|s| {
            let watchdog = Watchdog {
                child: &self.child,
                pid: self.pid,
                stdin: &self.stdin,
                watch,
                ended: &ended,
            };
            let watching = s.spawn(move || watchdog.watch(stopped));
            let got = if send(&self.stdin, header, body).is_err() {
                Err(EndCause::Died)
            } else {
                loop {
                    match next_frame(&self.frames, &ended) {
                        Ok((frame, body)) => {
                            if let Some(done) = handle(frame, body) {
                                break Ok(done);
                            }
                        }
                        Err(cause) => break Err(cause),
                    }
                }
            };
            let _ = stop.send(());
            let killed = watching.join().ok().flatten();
            match (got, killed) {
                (_, Some(Kill::Timeout(after))) => Err(EndCause::TimedOut(after)),
                (_, Some(Kill::Cancel)) => Err(EndCause::CancelIgnored),
                (got, None) => got,
            }
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing stdin (dropping it) would end an idle worker; killing
        // its group also ends what its plugins forked. Either way it is
        // reaped.
        self.kill();
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.reaped = true;
    }
}

/// The worker's next frame, or why none will come: its pipe ended or
/// broke, it sent something that is not the protocol, or it ended (the
/// watchdog saw it) and nothing more came within [`DRAIN_AFTER_END`].
pub(super) fn next_frame(
    frames: &mpsc::Receiver<Frame>,
    ended: &Mutex<Option<Instant>>,
) -> Result<(FromWorker, Vec<u8>), EndCause> {
    loop {
        match frames.recv_timeout(TICK) {
            Ok(Ok(Some(frame))) => return Ok(frame),
            Ok(Ok(None)) | Ok(Err(FrameError::Broken)) | Err(RecvTimeoutError::Disconnected) => {
                return Err(EndCause::Died)
            }
            Ok(Err(FrameError::Malformed(m))) => return Err(EndCause::Protocol(m)),
            Err(RecvTimeoutError::Timeout) => {
                let gone_for = ended.lock().ok().and_then(|at| at.map(|at| at.elapsed()));
                if gone_for.is_some_and(|d| d > DRAIN_AFTER_END) {
                    return Err(EndCause::Died);
                }
            }
        }
    }
}

/// Writes one frame to a worker.
pub(super) fn send(
    stdin: &Mutex<BufWriter<ChildStdin>>,
    header: &ToWorker,
    body: &dyn Body,
) -> std::io::Result<()> {
    let mut stdin = stdin
        .lock()
        .map_err(|_| std::io::Error::other("worker stdin lock poisoned"))?;
    write_frame_body(&mut *stdin, header, body)
}

/// Kills a worker (SIGKILL) and its process group; its pipes then close,
/// unless a process that left the group holds them. Only for a worker not
/// yet reaped.
pub(super) fn kill(child: &Mutex<Child>, pid: u32) {
    group::kill_group(pid);
    if let Ok(mut child) = child.lock() {
        let _ = child.kill();
    }
}

/// `true` once the worker has exited or was killed. On Unix it is not
/// reaped, so that its group can still be killed.
pub(super) fn worker_ended(child: &Mutex<Child>, pid: u32) -> bool {
    #[cfg(unix)]
    {
        let _ = child;
        group::has_ended(pid)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        child
            .lock()
            .is_ok_and(|mut c| matches!(c.try_wait(), Ok(Some(_))))
    }
}
