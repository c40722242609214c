//! Opening an environment: the data and lock files, the map, the first
//! meta pages of a new file, and the WAL roll-forward (`wal_open.rs`).

use super::*;

/// Map `want` bytes of `file` (the auto-grow ceiling), or as much of it as
/// the address space allows, halving down to `need`.
fn reserve(
    file: &File,
    want: usize,
    need: usize,
    writable: bool,
    at: Option<usize>,
    psize: usize,
) -> Result<Map> {
    let mut len = want;
    loop {
        match Map::new(file, len, writable, at) {
            Err(e) if e == ErrorKind::Os(libc::ENOMEM) && len / 2 >= need && at.is_none() => {
                len = (len / 2).next_multiple_of(psize);
            }
            r => return r,
        }
    }
}

/// Reader slots of the in-memory table of NO_LOCK (LMDB has no limit there).
const NO_LOCK_SLOTS: u32 = 4096;

static NEXT_ENV_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

fn page_size_os() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (p.max(4096) as usize).min(32768)
}

impl Env {
    /// Open an environment with default options (see [`EnvOptions`]);
    /// `path` is a directory that must exist.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let env = mdb::Env::open(dir.path())?;
    /// assert!(dir.path().join("data.mdb").is_file());
    /// assert!(dir.path().join("lock.mdb").is_file());
    /// # Ok::<(), mdb::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Env> {
        EnvOptions::new().open(path)
    }

    pub(super) fn open_with(o: &EnvOptions, path: &Path) -> Result<Env> {
        let mut flags = o.flags;
        if flags.0 & !EnvFlags::VALID != 0 || (flags.contains(EnvFlags::NO_LOCK) && !o.no_lock) {
            return Err(ErrorKind::Misuse(Misuse::BadEnvFlags).into());
        }
        if o.max_readers > crate::lock::MAX_READERS {
            return Err(ErrorKind::Os(libc::EINVAL).into());
        }
        if o.no_lock {
            flags = flags | EnvFlags::NO_LOCK;
        }
        let no_lock = flags.contains(EnvFlags::NO_LOCK);
        let rdonly = flags.contains(EnvFlags::READ_ONLY);
        if rdonly {
            flags.0 &= !EnvFlags::WRITE_MAP.0;
        }
        let (data_path, lock_path) = if flags.contains(EnvFlags::NO_SUB_DIR) {
            let md = std::fs::metadata(path);
            if let Ok(m) = md {
                if m.is_dir() {
                    return Err(ErrorKind::Os(libc::EISDIR).into());
                }
            }
            let mut l = path.as_os_str().to_owned();
            l.push("-lock");
            (path.to_path_buf(), PathBuf::from(l))
        } else {
            let m = std::fs::metadata(path)?;
            if !m.is_dir() {
                return Err(ErrorKind::Os(libc::ENOTDIR).into());
            }
            (path.join("data.mdb"), path.join("lock.mdb"))
        };

        // The data file first, as LMDB does: a read-only open of a place
        // with no environment fails before it creates a lock file there.
        let mut oo = OpenOptions::new();
        oo.read(true).mode(o.mode).custom_flags(libc::O_CLOEXEC);
        if !rdonly {
            oo.write(true).create(true);
        }
        let file: File = oo.open(&data_path)?;
        let meta_sync = if rdonly {
            None
        } else {
            Some(
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_DSYNC | libc::O_CLOEXEC)
                    .open(&data_path)?,
            )
        };

        // Held until the lock is ready for other `Env`s (`finish_open`).
        let mut registry = crate::lock::registry();
        let lock = if no_lock {
            None
        } else {
            Some(registry.lock_file(&lock_path, o.max_readers, o.mode)?)
        };
        let lock = match lock {
            Some(l) => l,
            None => registry.in_memory(&file, o.max_readers.max(NO_LOCK_SLOTS))?,
        };
        let df = DataFile::new(file, meta_sync, o.fault.clone());

        let flen = df.len()?;
        let wal = open_wal(o, (path, &data_path), flags, &df, &lock, flen)?;
        let created = flen == 0;
        let mut meta = if flen == 0 {
            if rdonly {
                return Err(ErrorKind::Os(libc::ENOENT).into());
            }
            let psize = page_size_os();
            let mapsize = match (o.map_size, o.auto_grow) {
                (0, _) => DEFAULT_MAPSIZE,
                (n, true) => n.min(DEFAULT_MAPSIZE),
                (n, false) => n,
            };
            let m = Meta::new_env(
                psize as u32,
                mapsize as u64,
                (flags.0 & EnvFlags::IN_META) as u16,
            );
            let mut both = m.encode_page(0, psize);
            both.extend_from_slice(&m.encode_page(1, psize));
            if let Some(w) = &wal {
                // Tied to its log from the start (`wal/tie.rs`).
                let id = crate::wal::tie::encode(w.ident());
                for at in [0, psize] {
                    let at = at + crate::wal::tie::IDENT_OFF as usize;
                    both[at..at + id.len()].copy_from_slice(&id);
                }
            }
            df.file_write_initial(&both)?;
            m
        } else {
            // Both headers must be sound (as LMDB requires); of their
            // snapshots, an implausible one is passed over.
            let mut b0 = [0u8; META_LEN];
            df.read_exact_at(&mut b0, 0)?;
            let psize = Meta::fields(Meta::check_header(&b0)?).psize();
            let mut b1 = [0u8; META_LEN];
            df.read_exact_at(&mut b1, psize as u64)?;
            if Meta::fields(Meta::check_header(&b1)?).psize() != psize {
                return Err(ErrorKind::Invalid.into());
            }
            pick_meta(Meta::decode(&b0), Meta::decode(&b1))?.1
        };
        let psize = meta.psize() as usize;
        let mapsize = match (o.map_size, o.auto_grow) {
            (0, true) => DEFAULT_CEILING.max(meta.mapsize as usize),
            (0, false) => meta.mapsize as usize,
            (n, _) => n,
        };
        let used = (meta.last_pgno as usize)
            .checked_add(1)
            .and_then(|n| n.checked_mul(psize))
            .ok_or(ErrorKind::Invalid)?;
        let round = |n: usize| {
            n.checked_next_multiple_of(psize)
                .filter(|&m| m <= isize::MAX as usize)
                .ok_or(ErrorKind::Os(libc::ENOMEM))
        };
        let mapsize = round(mapsize.max(used))?;
        let writemap = flags.contains(EnvFlags::WRITE_MAP);
        if writemap {
            // With auto-grow the file holds the size it records, not the
            // ceiling (commits extend it in steps).
            let file_size = if o.auto_grow {
                round((meta.mapsize as usize).max(used))?
            } else {
                mapsize
            };
            df.extend_to(file_size as u64)?;
        }
        let fixed = flags.contains(EnvFlags::FIXED_MAP);
        let at = if fixed && !created && meta.address != 0 {
            Some(meta.address as usize)
        } else {
            None
        };
        let map = if o.auto_grow {
            reserve(&df.file, mapsize, used, writemap, at, psize)?
        } else {
            Map::new(&df.file, mapsize, writemap, at)?
        };
        let ceiling = AtomicU64::new(if o.auto_grow { mapsize as u64 } else { 0 });
        if fixed && created {
            // Record where this file is mapped, in both meta pages.
            meta.address = map.addr() as u64;
            let mut both = meta.encode_page(0, psize);
            both.extend_from_slice(&meta.encode_page(1, psize));
            df.file_write_initial(&both)?;
        }
        lock.finish_open(meta.txnid)?;
        drop(registry);
        let mut dbis = vec![
            DbiInfo {
                name: None,
                flags: meta.free.flags,
                cmp: None,
                dcmp: None,
                pending: None,
                snap: None,
            },
            DbiInfo {
                name: None,
                flags: meta.main.flags,
                cmp: None,
                dcmp: None,
                pending: None,
                snap: None,
            },
        ];
        dbis.reserve(o.max_dbs as usize);
        let file_pages = AtomicU64::new(df.len()? / psize as u64);
        let wal = match wal {
            Some(w) => {
                let own = DataFile::new(df.file.try_clone()?, None, o.fault.clone());
                // Writers outside WAL mode beside us honour reader slots only.
                w.hold_in(lock.clone())?;
                Some(Arc::new(WalEnv::new(w, own, lock.clone(), psize)?))
            }
            None => None,
        };
        let checkpointer = match &wal {
            Some(w) if w.wal.opts.checkpointer => Some(Worker::checkpointer(w.clone())?),
            _ => None,
        };
        let flusher = match &wal {
            Some(w) => Some(Worker::flusher(w.clone())?),
            None => None,
        };
        lock.handles.fetch_add(1, Ordering::AcqRel);
        Ok(Env {
            path: path.to_path_buf(),
            flags: AtomicU32::new(flags.0),
            psize,
            maps: Maps::new(map, flags.contains(EnvFlags::NO_READAHEAD)),
            ceiling,
            spill_at: if wal.is_some() || writemap {
                0
            } else {
                o.txn_memory
                    .max(if o.txn_memory == 0 { 0 } else { 64 * psize })
            },
            file: df,
            thread_slots: Arc::new(ThreadSlots::new(lock.clone())),
            file_pages,
            lock,
            max_readers: o.max_readers,
            dbis: RwLock::new(dbis),
            max_dbs: o.max_dbs,
            page_pool: Mutex::new(Vec::new()),
            dirty_hint: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            writing: AtomicBool::new(false),
            custom_cmp: AtomicBool::new(false),
            id: NEXT_ENV_ID.fetch_add(1, Ordering::Relaxed),
            wal,
            checkpointer,
            flusher,
        })
    }
}

impl DataFile {
    /// Write the two meta pages of a new file and make them durable.
    pub(crate) fn file_write_initial(&self, both: &[u8]) -> Result<()> {
        self.write_pages(both.len() / 2, &[(0, both)])?;
        self.sync_data()
    }
}
