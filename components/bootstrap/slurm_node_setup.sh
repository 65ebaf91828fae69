ensure_slurm_user || exit 1
install_packages || exit 1
install_munge_key || exit 1
start_munge || exit 1
mount_home || exit 1
