# Writes and installs cairn.pc (<libdir>/pkgconfig, beside <libdir>/cmake/cairn) for builds that
# do not use CMake: `pkg-config --cflags --libs cairn`.
#
# Like the CMake package (cairnConfig.cmake finds MPI again when cairn was built with it), the
# link line carries the MPI libraries cairn's MPI engine needs: in Libs for a static libcairn
# (the default), in Libs.private for a shared one. The public headers need no MPI header.

# The prefix relative to the .pc file, so that `cmake --install --prefix <any>` works.
function(_cairn_pc_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CAIRN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _cairn_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _cairn_up "${_cairn_up}")
  set(CAIRN_PC_PREFIX "\${pcfiledir}/${_cairn_up}")
endif()
_cairn_pc_dir(CAIRN_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
_cairn_pc_dir(CAIRN_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")

# Link flags of libraries given as CMake lists them: full paths become -L<dir> (with an rpath,
# once per directory) and -l<name>; flags stay as they are.
function(_cairn_pc_link_flags out)
  set(flags "")
  set(dirs "")
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "^-")
      list(APPEND flags "${lib}")
    elseif(lib MATCHES "^(.*)/lib([^/]+)\\.(so|a|dylib)(\\.[0-9.]+)?$")
      if(NOT CMAKE_MATCH_1 IN_LIST dirs)
        list(APPEND dirs "${CMAKE_MATCH_1}")
        list(APPEND flags "-L${CMAKE_MATCH_1}" "-Wl,-rpath,${CMAKE_MATCH_1}")
      endif()
      list(APPEND flags "-l${CMAKE_MATCH_2}")
    elseif(IS_ABSOLUTE "${lib}")
      list(APPEND flags "${lib}")
    else()
      list(APPEND flags "-l${lib}")
    endif()
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# Sets <prefix>_LIBS and <prefix>_LIBS_PRIVATE for a .pc file: `libs` (a list of flags) in Libs
# when `target` is a static library (its users link them), in Libs.private when it is shared.
function(_cairn_pc_libs prefix target libs)
  list(JOIN libs " " joined)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    set(${prefix}_LIBS "${joined}" PARENT_SCOPE)
    set(${prefix}_LIBS_PRIVATE "" PARENT_SCOPE)
  else()
    set(${prefix}_LIBS "" PARENT_SCOPE)
    set(${prefix}_LIBS_PRIVATE "${joined}" PARENT_SCOPE)
  endif()
endfunction()

# MPI's link flags as -L/-l (full library paths split into directory and name).
set(_cairn_mpi_libs "")
if(CAIRN_HAVE_MPI)
  set(CAIRN_PC_ENGINES "threads, mpi")
  if(MPI_CXX_LINK_FLAGS)
    separate_arguments(_cairn_flags UNIX_COMMAND "${MPI_CXX_LINK_FLAGS}")
    list(APPEND _cairn_mpi_libs ${_cairn_flags})
  endif()
  _cairn_pc_link_flags(_cairn_flags ${MPI_CXX_LIBRARIES})
  list(APPEND _cairn_mpi_libs ${_cairn_flags})
else()
  set(CAIRN_PC_ENGINES "threads")
endif()
_cairn_pc_libs(CAIRN_PC cairn "${_cairn_mpi_libs}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/cairn.pc.in ${PROJECT_BINARY_DIR}/cairn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cairn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cairn-fft.pc where cairn::fft is built: its library and FFTW's (double and single precision,
# and their threads libraries for the thread-safe planner), in Libs for a static library.
if(CAIRN_HAVE_FFT)
  _cairn_pc_link_flags(_cairn_fft_libs ${CAIRN_FFTW_THREADS_LIBRARY} ${CAIRN_FFTWF_THREADS_LIBRARY}
                       ${CAIRN_FFTW_LIBRARY} ${CAIRN_FFTWF_LIBRARY})
  _cairn_pc_libs(CAIRN_PC_FFT cairn_fft "${_cairn_fft_libs}")
  configure_file(${CMAKE_CURRENT_LIST_DIR}/cairn-fft.pc.in ${PROJECT_BINARY_DIR}/cairn-fft.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/cairn-fft.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
