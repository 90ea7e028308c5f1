"""HalfCheetah: gymnasium's MuJoCo HalfCheetah running and jumping to instructions."""
