use super::*;
use std::fs;
use std::os::unix::fs::symlink;

const RESOLVERS: [Resolver; 2] = [Resolver::Auto, Resolver::Components];

/// A folder `held` to hold and a folder `outside` a link leads to.
struct Setup {
    _tmp: tempfile::TempDir,
    held: PathBuf,
    outside: PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().expect("tmp");
    let held = tmp.path().join("held");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(held.join("sub")).expect("mkdir");
    fs::create_dir_all(&outside).expect("mkdir");
    fs::write(outside.join("target"), b"outside").expect("write");
    Setup {
        _tmp: tmp,
        held,
        outside,
    }
}

fn hold(dir: &Path, resolver: Resolver) -> Beneath {
    Beneath::open(dir).expect("open").with_resolver(resolver)
}

fn assert_link_refused(e: &FsError, link: &Path) {
    assert!(e.is_refused_link(), "{e}");
    assert_eq!(e.path, link, "{e}");
    let text = e.to_string();
    assert!(text.contains(&link.display().to_string()), "{text}");
}

fn outside_untouched(s: &Setup) {
    assert_eq!(
        fs::read(s.outside.join("target")).expect("read"),
        b"outside"
    );
    let names: Vec<_> = fs::read_dir(&s.outside)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![OsString::from("target")]);
}

#[test]
fn writes_reads_appends_lists_and_removes_below_the_folder() {
    for resolver in RESOLVERS {
        let s = setup();
        let b = hold(&s.held, resolver);
        b.write_atomic("a/b/c.txt", b"one").expect("write");
        b.write_atomic("a/b/c.txt", b"two").expect("replace");
        assert_eq!(b.read("a/b/c.txt").expect("read"), Some(b"two".to_vec()));
        assert_eq!(b.read("a/none").expect("read"), None);
        b.append("log", b"1\n").expect("append");
        b.append("./log", b"2\n").expect("append");
        assert_eq!(fs::read(s.held.join("log")).expect("read"), b"1\n2\n");
        b.write_batch(&[("p/x", b"x".to_vec()), ("p/y", b"y".to_vec())])
            .expect("batch");
        let names: Vec<_> = b.list("p").expect("list").into_iter().collect();
        assert_eq!(
            names,
            vec![
                (OsString::from("x"), EntryKind::File(1)),
                (OsString::from("y"), EntryKind::File(1))
            ]
        );
        assert_eq!(b.entry("a/b").expect("entry"), Some(EntryKind::Dir));
        assert_eq!(b.entry("a/zz").expect("entry"), None);
        assert!(b.remove_file("p/x").expect("remove"));
        assert!(!b.remove_file("p/x").expect("gone"));
        b.rename("p/y", "p/z").expect("rename");
        assert_eq!(b.read("p/z").expect("read"), Some(b"y".to_vec()));
        // Where the kernel has openat2, the default resolver used it.
        #[cfg(target_os = "linux")]
        if resolver == Resolver::Auto {
            assert_ne!(imp::openat2_state(), 0, "openat2 was tried");
        }
        let sub = b.dir("a/b").expect("sub");
        assert_eq!(sub.read("c.txt").expect("read"), Some(b"two".to_vec()));
        // No temporary file left.
        let left: Vec<_> = fs::read_dir(s.held.join("a/b"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, vec![OsString::from("c.txt")], "{resolver:?}");
    }
}

#[test]
fn a_link_at_the_last_component_is_refused_by_name() {
    for resolver in RESOLVERS {
        let s = setup();
        let link = s.held.join("sub/file");
        symlink(s.outside.join("target"), &link).expect("symlink");
        let b = hold(&s.held, resolver);
        assert_link_refused(&b.write_atomic("sub/file", b"x").expect_err("write"), &link);
        assert_link_refused(&b.append("sub/file", b"x").expect_err("append"), &link);
        assert_link_refused(&b.read("sub/file").expect_err("read"), &link);
        assert_link_refused(
            &b.write_batch(&[("sub/file", b"x".to_vec())])
                .expect_err("batch"),
            &link,
        );
        assert_link_refused(
            &b.rename("sub/file", "sub/other").expect_err("rename"),
            &link,
        );
        assert_eq!(b.entry("sub/file").expect("entry"), Some(EntryKind::Link));
        // A dangling link is not created through either.
        let dangling = s.held.join("dangling");
        symlink(s.outside.join("new"), &dangling).expect("symlink");
        assert_link_refused(&b.append("dangling", b"x").expect_err("append"), &dangling);
        assert_link_refused(
            &b.write_atomic("dangling", b"x").expect_err("write"),
            &dangling,
        );
        // The link itself is still there, not replaced.
        assert!(fs::symlink_metadata(&link).expect("link").is_symlink());
        outside_untouched(&s);
    }
}

#[test]
fn a_link_at_a_middle_component_is_refused_by_name() {
    for resolver in RESOLVERS {
        let s = setup();
        let link = s.held.join("sub/patches");
        symlink(&s.outside, &link).expect("symlink");
        let b = hold(&s.held, resolver);
        assert_link_refused(
            &b.write_atomic("sub/patches/new", b"x").expect_err("write"),
            &link,
        );
        assert_link_refused(
            &b.write_batch(&[("sub/patches/a", b"x".to_vec())])
                .expect_err("batch"),
            &link,
        );
        assert_link_refused(
            &b.append("sub/patches/target", b"x").expect_err("append"),
            &link,
        );
        assert_link_refused(&b.read("sub/patches/target").expect_err("read"), &link);
        assert_link_refused(&b.dir("sub/patches").expect_err("dir"), &link);
        assert_link_refused(
            &b.create_dir_all("sub/patches/deeper").expect_err("mkdir"),
            &link,
        );
        assert_link_refused(&b.list("sub/patches").expect_err("list"), &link);
        assert_link_refused(&b.remove_file("sub/patches/target").expect_err("rm"), &link);
        // Opening below a link is refused too.
        assert_link_refused(
            &Beneath::open_below(&s.held, Path::new("sub/patches"), true).expect_err("open_below"),
            &link,
        );
        outside_untouched(&s);
    }
}

#[test]
fn parent_components_and_absolute_paths_are_refused() {
    for resolver in RESOLVERS {
        let s = setup();
        let b = hold(&s.held.join("sub"), resolver);
        for bad in ["../outside/target", "a/../../x", "/etc/passwd"] {
            let e = b.write_atomic(bad, b"x").expect_err(bad);
            assert!(e.to_string().contains("leaves the folder"), "{e}");
            let e = b.read(bad).expect_err(bad);
            assert!(e.to_string().contains("leaves the folder"), "{e}");
        }
        outside_untouched(&s);
    }
}

#[test]
fn a_folder_swapped_for_a_link_after_it_was_opened_is_not_followed() {
    for resolver in RESOLVERS {
        let s = setup();
        let b = hold(&s.held, resolver);
        let moved = s.held.with_file_name("moved");
        fs::rename(&s.held, &moved).expect("move away");
        symlink(&s.outside, &s.held).expect("link in its place");
        b.write_atomic("written", b"x").expect("write");
        b.append("sub/appended", b"x").expect("append");
        assert_eq!(fs::read(moved.join("written")).expect("read"), b"x");
        assert_eq!(fs::read(moved.join("sub/appended")).expect("read"), b"x");
        outside_untouched(&s);
    }
}

#[test]
fn fifos_are_refused_without_blocking() {
    for resolver in RESOLVERS {
        let s = setup();
        let fifo = s.held.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let b = hold(&s.held, resolver);
        let e = b.read("fifo").expect_err("read");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(b.append("fifo", b"x").is_err());
        assert_eq!(b.entry("fifo").expect("entry"), Some(EntryKind::Other));
    }
}
