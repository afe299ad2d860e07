//! The devices control on cgroup v2, which has no `devices.deny` file: a
//! small eBPF program of type `BPF_PROG_TYPE_CGROUP_DEVICE`, attached to the
//! job's cgroup, refuses the device files it is given (as systemd and
//! Slurm's cgroup/v2 plugin do) and allows every other.
//!
//! The program reads the access's device type, major and minor from its
//! context (`struct bpf_cgroup_dev_ctx`: `access_type` whose low 16 bits are
//! the type, then `major`, `minor`) and compares them with each denied
//! device in turn.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;
/// `BPF_DEVCG_DEV_BLOCK`, `BPF_DEVCG_DEV_CHAR`.
const DEV_BLOCK: i32 = 1;
const DEV_CHAR: i32 = 2;

/// One eBPF instruction: opcode, destination and source registers, offset,
/// immediate.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = (src << 4) | (dst & 0x0f);
    b[2..4].copy_from_slice(&off.to_le_bytes());
    b[4..8].copy_from_slice(&imm.to_le_bytes());
    b
}

/// The program denying `deny` ((type, major, minor)), allowing the rest.
pub fn program(deny: &[(char, u32, u32)]) -> Vec<u8> {
    const LDX_W: u8 = 0x61; // r_dst = *(u32 *)(r_src + off)
    const AND_K: u8 = 0x57; // r_dst &= imm (64-bit)
    const JNE_K: u8 = 0x55; // if r_dst != imm goto +off
    const JA: u8 = 0x05; // goto +off
    const MOV_K: u8 = 0xb7; // r_dst = imm (64-bit)
    const EXIT: u8 = 0x95;
    let n = deny.len() as i32;
    let mut p = vec![insn(LDX_W, 2, 1, 0, 0), insn(AND_K, 2, 0, 0, 0xffff), insn(LDX_W, 3, 1, 4, 0), insn(LDX_W, 4, 1, 8, 0)];
    for (i, &(t, major, minor)) in deny.iter().enumerate() {
        let t = if t == 'b' { DEV_BLOCK } else { DEV_CHAR };
        p.push(insn(JNE_K, 2, 0, 3, t));
        p.push(insn(JNE_K, 3, 0, 2, major as i32));
        p.push(insn(JNE_K, 4, 0, 1, minor as i32));
        // to the denial past the allowing exit
        p.push(insn(JA, 0, 0, (4 * (n - i as i32) - 2) as i16, 0));
    }
    p.extend([insn(MOV_K, 0, 0, 0, 1), insn(EXIT, 0, 0, 0, 0), insn(MOV_K, 0, 0, 0, 0), insn(EXIT, 0, 0, 0, 0)]);
    p.concat()
}

fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> io::Result<i64> {
    // SAFETY: the bpf system call on a zeroed attribute block of 128 bytes.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Attach a program denying `deny` to the cgroup v2 directory `cgroup`.
pub fn deny_devices(cgroup: &Path, deny: &[(char, u32, u32)]) -> io::Result<()> {
    let code = program(deny);
    let license = b"GPL\0";
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&BPF_PROG_TYPE_CGROUP_DEVICE.to_le_bytes());
    attr[4..8].copy_from_slice(&((code.len() / 8) as u32).to_le_bytes());
    attr[8..16].copy_from_slice(&(code.as_ptr() as u64).to_le_bytes());
    attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_le_bytes());
    attr[48..56].copy_from_slice(b"tessera\0");
    attr[68..72].copy_from_slice(&BPF_CGROUP_DEVICE.to_le_bytes());
    let prog = bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| io::Error::new(e.kind(), format!("loading the devices program: {e}")))?;
    // SAFETY: the call returned a new file descriptor, owned here.
    let prog = unsafe { OwnedFd::from_raw_fd(prog as i32) };
    let dir = std::fs::File::open(cgroup)?;
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&(dir.as_raw_fd() as u32).to_le_bytes());
    attr[4..8].copy_from_slice(&(prog.as_raw_fd() as u32).to_le_bytes());
    attr[8..12].copy_from_slice(&BPF_CGROUP_DEVICE.to_le_bytes());
    bpf(BPF_PROG_ATTACH, &mut attr).map_err(|e| io::Error::new(e.kind(), format!("attaching the devices program to {}: {e}", cgroup.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_checks_each_denied_device_and_ends_in_allow_or_deny() {
        let p = program(&[('c', 240, 1), ('b', 8, 0)]);
        assert_eq!(p.len() / 8, 4 + 4 * 2 + 4);
        // the first entry's jump lands on the denial (index 4 + 8 + 2 = 14)
        let ja = &p[7 * 8..8 * 8];
        assert_eq!(ja[0], 0x05);
        assert_eq!(i16::from_le_bytes([ja[2], ja[3]]), 14 - 8);
        // a char device's type is 2
        assert_eq!(i32::from_le_bytes(p[4 * 8 + 4..4 * 8 + 8].try_into().unwrap()), 2);
    }
}
