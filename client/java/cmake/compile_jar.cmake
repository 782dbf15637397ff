# Compiles every .java file under SOURCE_DIRS into a jar (cmake -P, from CMakeLists.txt). A script
# rather than one javac command line: the protoc-generated file names are only known once protoc
# ran, and an @argfile keeps the command line short however many there are.
#
# -D JAVAC=... JAR=... RELEASE=17 CLASSPATH=a.jar:b.jar SOURCE_DIRS=dir1|dir2 WORK_DIR=... JAR_FILE=...
#    [MAIN_CLASS=...]
string(REPLACE "|" ";" dirs "${SOURCE_DIRS}")
set(sources)
foreach(dir ${dirs})
  file(GLOB_RECURSE found "${dir}/*.java")
  list(APPEND sources ${found})
endforeach()
list(SORT sources)
if(NOT sources)
  message(FATAL_ERROR "no .java file under ${SOURCE_DIRS}")
endif()

set(classes "${WORK_DIR}/classes")
file(REMOVE_RECURSE "${classes}")
file(MAKE_DIRECTORY "${classes}")
set(argfile "${WORK_DIR}/sources.txt")
string(REPLACE ";" "\n" lines "${sources}")
file(WRITE "${argfile}" "${lines}\n")

execute_process(
  COMMAND "${JAVAC}" --release ${RELEASE} -encoding UTF-8 -Xlint:all -g
          -cp "${CLASSPATH}" -d "${classes}" "@${argfile}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javac failed (${rc})")
endif()

set(entry)
if(MAIN_CLASS)
  set(entry --main-class ${MAIN_CLASS})
endif()
file(REMOVE "${JAR_FILE}")
execute_process(
  COMMAND "${JAR}" --create --file "${JAR_FILE}" ${entry} -C "${classes}" .
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "jar failed (${rc})")
endif()
