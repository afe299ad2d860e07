//! Raw system calls, for the code that runs in a shepherd and in a job before
//! its exec.
//!
//! Both share the launcher's memory (`CLONE_VM`) while the launcher goes on
//! running, so neither may touch what the C library keeps per thread: its
//! wrappers set `errno`, which lives in the launcher's thread-local storage
//! (a shepherd has the same thread pointer). These calls go straight to the
//! kernel, return its result (a negated errno on failure) and write no memory.

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn call(n: libc::c_long, a: [usize; 6]) -> isize {
    let r: isize;
    core::arch::asm!(
        "syscall",
        inlateout("rax") n as isize => r,
        in("rdi") a[0], in("rsi") a[1], in("rdx") a[2], in("r10") a[3], in("r8") a[4], in("r9") a[5],
        lateout("rcx") _, lateout("r11") _,
        options(nostack),
    );
    r
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn call(n: libc::c_long, a: [usize; 6]) -> isize {
    let r: isize;
    core::arch::asm!(
        "svc 0",
        in("x8") n,
        inlateout("x0") a[0] as isize => r,
        in("x1") a[1], in("x2") a[2], in("x3") a[3], in("x4") a[4], in("x5") a[5],
        options(nostack),
    );
    r
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the agent's launch path has raw system calls for x86_64 and aarch64 only");

/// `clone(flags)` with the child running `f(arg)` on the stack whose top is
/// `stack` (16-byte aligned); `f` never returns. Returns the child's pid, or a
/// negated errno. The child starts with the parent's registers but its own
/// stack, so it runs nothing of the parent's frame.
#[inline(never)]
pub unsafe fn clone_on(flags: usize, stack: *mut u8, f: unsafe extern "C" fn(usize) -> !, arg: usize) -> isize {
    let r: isize;
    #[cfg(target_arch = "x86_64")]
    core::arch::asm!(
        "syscall",
        "test rax, rax",
        "jnz 2f",
        // the child: a fresh stack, no caller frame
        "xor ebp, ebp",
        "mov rdi, r13",
        "call r12",
        "ud2",
        "2:",
        inlateout("rax") libc::SYS_clone as isize => r,
        in("rdi") flags, in("rsi") stack, in("rdx") 0usize, in("r10") 0usize, in("r8") 0usize,
        in("r12") f as usize, in("r13") arg,
        lateout("rcx") _, lateout("r11") _,
    );
    #[cfg(target_arch = "aarch64")]
    core::arch::asm!(
        "svc 0",
        "cbnz x0, 2f",
        // the child: a fresh stack, no caller frame
        "mov x29, xzr",
        "mov x0, x10",
        "blr x9",
        "brk #1",
        "2:",
        in("x8") libc::SYS_clone,
        inlateout("x0") flags as isize => r,
        in("x1") stack, in("x2") 0usize, in("x3") 0usize, in("x4") 0usize,
        in("x9") f as usize, in("x10") arg,
    );
    r
}

pub unsafe fn write(fd: i32, buf: &[u8]) -> isize {
    call(libc::SYS_write, [fd as usize, buf.as_ptr() as usize, buf.len(), 0, 0, 0])
}

pub unsafe fn dup2(from: i32, to: i32) {
    if from != to {
        call(libc::SYS_dup3, [from as usize, to as usize, 0, 0, 0, 0]);
    }
}

/// Set a signal's disposition to `SIG_DFL` or `SIG_IGN` (no handler, so no
/// restorer is needed).
pub unsafe fn disposition(sig: i32, how: libc::sighandler_t) {
    // the kernel's struct sigaction: handler, flags, restorer, mask
    let act: [usize; 4] = [how, 0, 0, 0];
    call(libc::SYS_rt_sigaction, [sig as usize, act.as_ptr() as usize, 0, 8, 0, 0]);
}

/// Unblock every signal.
pub unsafe fn unblock_all() {
    let none: u64 = 0;
    call(libc::SYS_rt_sigprocmask, [libc::SIG_SETMASK as usize, &none as *const u64 as usize, 0, 8, 0, 0]);
}

pub unsafe fn exit(code: i32) -> ! {
    loop {
        call(libc::SYS_exit_group, [code as usize, 0, 0, 0, 0, 0]);
    }
}
