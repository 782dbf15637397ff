# Runs at install time (install(SCRIPT) in deploy/CMakeLists.txt), so that the paths written into
# the config and the unit are those of the prefix the install goes to: `cmake --install --prefix P`
# gives P/etc/ckptd/ckptd.yaml and a unit that starts P/bin/ckptd with it; the Debian package
# (prefix /usr) gives /etc/ckptd/ckptd.yaml, as Debian keeps configuration in /etc.
# Set by the install(CODE) before it: ckpt_config_source, ckpt_unit_source, ckpt_stage_dir.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(conf_dir /etc/ckptd)
else()
  set(conf_dir "${prefix}/etc/ckptd")
endif()

# The config: data_dir where the unit's StateDirectory= puts it.
file(READ "${ckpt_config_source}" config_text)
string(FIND "${config_text}" "\ndata_dir: ./ckptd-data\n" data_dir_at)
if(data_dir_at EQUAL -1)
  message(FATAL_ERROR "${ckpt_config_source}: no 'data_dir: ./ckptd-data' line to point at /var/lib/ckptd")
endif()
string(REPLACE "\ndata_dir: ./ckptd-data\n" "\ndata_dir: /var/lib/ckptd\n" config_text "${config_text}")
file(WRITE "${ckpt_stage_dir}/ckptd.yaml" "${config_text}")

file(READ "${ckpt_unit_source}" unit_text)
string(REPLACE "/usr/bin/ckptd" "${prefix}/bin/ckptd" unit_text "${unit_text}")
string(REPLACE "/etc/ckptd/" "${conf_dir}/" unit_text "${unit_text}")
file(WRITE "${ckpt_stage_dir}/ckptd.service" "${unit_text}")

# file(INSTALL) as install(FILES) does it: under DESTDIR, listed in the install manifest.
file(INSTALL DESTINATION "${conf_dir}" TYPE FILE FILES "${ckpt_stage_dir}/ckptd.yaml")
file(INSTALL DESTINATION "${prefix}/lib/systemd/system" TYPE FILE
     FILES "${ckpt_stage_dir}/ckptd.service")
